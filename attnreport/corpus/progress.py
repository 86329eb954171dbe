"""The study's stages drawn with rich on stderr (``RichProgress``, what ``build`` and
``analyze`` show on a terminal; ``plain_progress`` prints lines for a log), with a column
of items per second of the current stage (sentences/s).
The commands import this only when they run, so ``--help`` does not load rich.
"""

from __future__ import annotations

import logging

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from attnreport.corpus.plain_progress import STAGES


class RateColumn(ProgressColumn):
    """``12.3/s`` from rich's speed estimate; blank until there is one."""

    def render(self, task: Task) -> Text:
        speed = task.speed
        return Text("" if speed is None else f"{speed:.1f}/s", style="progress.data.speed")


class ConsoleHandler(logging.Handler):
    """Log records as ``level: message`` lines printed through a rich console, which draws
    them above its live progress display instead of under (and then over) it."""

    def __init__(self, console: Console, level: int) -> None:
        super().__init__(level)
        self.console = console

    def emit(self, record: logging.LogRecord) -> None:
        line = Text(f"{record.levelname.lower()}: {record.getMessage()}")
        self.console.print(line, soft_wrap=True, highlight=False)


class RichProgress:
    """Draws the study's stages with rich on stderr; a no-op when stderr is not a terminal.

    While it draws, the ``attnreport`` logger's handlers are swapped for one that prints
    through the same console, so a warning lands above the progress, whole.
    """

    LABELS = STAGES

    def __init__(self) -> None:
        self.progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            RateColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=False,
        )
        self.tasks: dict[str, TaskID] = {}
        self.current: str | None = None

    def __call__(self, stage: str, done: int, total: int) -> None:
        if ":" in stage:  # within the current stage: its own row, not a new stage
            self._within(stage, done, total)
            return
        if stage not in self.tasks:
            if self.current is not None:
                task = self.tasks[self.current]
                self.progress.update(task, completed=self.progress.tasks[task].total)
            self.tasks[stage] = self.progress.add_task(
                self.LABELS.get(stage, stage), total=max(total, 1), completed=done
            )
            self.current = stage
        self.progress.update(self.tasks[stage], completed=done)

    def _within(self, stage: str, done: int, total: int) -> None:
        """A row under the current stage (layers of this sentence, passes of the grids),
        restarted at 0; its time-remaining column is the estimate for the sentence or the
        grids. ``total`` may change (the Ray engine's sentences in flight)."""
        if stage not in self.tasks:
            label = self.LABELS.get(stage, stage)
            self.tasks[stage] = self.progress.add_task(label, total=max(total, 1))
        task = self.tasks[stage]
        if done <= 1:
            self.progress.reset(task, total=max(total, 1))
        self.progress.update(task, completed=done, total=max(total, 1))

    def __enter__(self) -> RichProgress:
        logger = logging.getLogger("attnreport")
        self._handlers = list(logger.handlers)
        level = min((h.level for h in self._handlers), default=logging.WARNING)
        for handler in self._handlers:
            logger.removeHandler(handler)
        self._console_handler = ConsoleHandler(self.progress.console, level)
        logger.addHandler(self._console_handler)
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            if self.current is not None and exc[0] is None:
                task = self.tasks[self.current]
                self.progress.update(task, completed=self.progress.tasks[task].total)
            self.progress.stop()
        finally:
            logger = logging.getLogger("attnreport")
            logger.removeHandler(self._console_handler)
            for handler in self._handlers:
                logger.addHandler(handler)
