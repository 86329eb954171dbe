"""The study's stages as tqdm bars for ``analyze``: a widget in Jupyter, JupyterLab and VS
Code (``tqdm.auto``, with ipywidgets), text on stderr elsewhere. The library prints
nothing else; its warnings go to the ``attnreport`` logger.

A stage (``load``, ``capture``, ``interventions``) is a bar of its own, labelled as the
command line labels it (``RichProgress.LABELS``); progress within a stage (the layers of
the sentence in flight, the forward passes of the grids) is a second bar under it,
restarted for each sentence and removed when the stage ends.
"""

from __future__ import annotations

from typing import Any

from attnreport.corpus.progress import RichProgress


class Bars:
    """A ``build.Progress`` drawing tqdm bars; ``enabled`` False draws nothing. Use as a
    context manager: leaving it closes every bar (the last stage shown as finished)."""

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self.stage: Any = None  # the bar of the current stage
        self.within: Any = None  # the bar of progress within it

    def __call__(self, stage: str, done: int, total: int) -> None:
        if not self.enabled:
            return
        if ":" in stage:
            self.within = self._moved(self.within, stage, done, total, leave=False)
        else:
            if self.stage is not None and self.stage.desc != _label(stage):
                self._finish()
            self.stage = self._moved(self.stage, stage, done, total, leave=True)

    def _moved(self, bar: Any, stage: str, done: int, total: int, leave: bool) -> Any:
        """``bar`` at ``done`` of ``total`` (a new one for a new label, or a restart)."""
        from tqdm.auto import tqdm

        if bar is None or bar.desc != _label(stage) or done < bar.n:
            if bar is not None:
                bar.close()
            bar = tqdm(total=max(total, 1), desc=_label(stage), leave=leave, dynamic_ncols=True)
        bar.total = max(total, 1)
        bar.update(done - bar.n)
        return bar

    def _finish(self) -> None:
        for bar in (self.within, self.stage):
            if bar is not None:
                bar.update(bar.total - bar.n)
                bar.close()
        self.stage = self.within = None

    def __enter__(self) -> Bars:
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is None:
            self._finish()
        for bar in (self.within, self.stage):
            if bar is not None:
                bar.close()


def _label(stage: str) -> str:
    return RichProgress.LABELS.get(stage, stage).strip()
