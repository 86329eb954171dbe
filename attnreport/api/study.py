"""``Study``: the results of one study in memory, and ``load`` of any results folder.

A study is its results files (``{relative path: bytes}``, what ``attnreport analyze
--out`` writes, less its resume state) and their typed value (``results``, the contract
between analysis and rendering: ``docs/results-schema.md``). Keeping the files as they
were written makes ``save`` write them back byte for byte and ``render`` draw what
``attnreport render`` draws from them. Nothing here imports torch: a study loads, shows
its tables and figures and renders where only the base install is.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attnreport.errors import AttnReportError
from attnreport.results import Results
from attnreport.results.io import parse_files, results_files
from attnreport.vocabulary import MARKER, OPTIONS_NAME

if TYPE_CHECKING:
    import altair as alt
    import pandas as pd

RESULTS_MARK = b"attnreport results\n"  # the marker's text in a results folder (``MARKER``)


class Study:
    """The results of one study: what ``attnreport.analyze`` returns and ``attnreport.load``
    reads. ``results`` is the typed value (``attnreport.results.Results``); ``tables``,
    ``table``, ``figures`` and ``figure`` show its parts; ``save`` writes its folder."""

    def __init__(self, files: Mapping[str, bytes], where: str = "") -> None:
        """``files``: a results folder's files by relative path (``results_files``), and
        ``render.json`` when they are a site's ``results/``; ``where`` prefixes their
        names in errors (the folder, ending in "/")."""
        self.files: dict[str, bytes] = dict(sorted(files.items()))
        self.results: Results = parse_files(self.files, where)

    def __repr__(self) -> str:
        m = self.results.manifest.model
        n = len(self.results.sentences)
        return (
            f"<Study of {m.name}: {n} sentence{'s' if n != 1 else ''}, "
            f"{m.n_layers} layers x {m.n_heads} heads>"
        )

    @property
    def sentences(self) -> tuple[str, ...]:
        """The sentences' texts, in order (sentence ``i`` of ``table`` and ``figure``)."""
        return tuple(s.text for s in self.results.sentences)

    def save(self, path: str | Path, force: bool = False) -> Path:
        """Write the results folder (the files ``attnreport analyze --out`` writes, less
        its resume state) to ``path``, replacing it only when complete; ``attnreport
        render``, ``compare`` and ``attnreport.load`` read it. ``force``: replace a
        folder attnreport did not write (its content is moved aside, as ``--force``
        does). Returns the folder."""
        from attnreport.output import write_site

        return write_site({**self.files, MARKER: RESULTS_MARK}, Path(path), force=force)

    def tables(self, sentence: int | None = None) -> tuple[str, ...]:
        """The names ``table`` takes: the set's tables, then those only the sentences have
        (``sentence`` None: every sentence's rows), or sentence ``sentence``'s tables."""
        from attnreport.api.tables import table_names

        return table_names(self.results, sentence)

    def table(self, name: str, sentence: int | None = None) -> pd.DataFrame:
        """Results table ``name`` as a pandas DataFrame whose columns are the schema's
        (``docs/results-schema.md``: ``layer``, ``head``, ``query``...; 0-based layers,
        heads and token positions; probabilities in 0..1; scores in the model's logit
        units). Without ``sentence``: the set-wide table of that name, or, for a table only
        the sentences have (``top``, ``breakdown``...), every sentence's rows after a
        ``sentence`` column; with it, that sentence's own table. Needs pandas."""
        from attnreport.api.tables import table_frame

        return table_frame(self.results, name, sentence)

    def figures(self, sentence: int | None = None) -> tuple[str, ...]:
        """The names ``figure`` takes, in the site's order: with ``sentence``, the figures
        of its page; without, the index's and every figure some sentence's page has."""
        from attnreport.api.figures import figure_names

        return figure_names(self.results, sentence)

    def figure(
        self,
        name: str,
        sentence: int | None = None,
        layer: int | None = None,
        head: int | None = None,
        *,
        every_view: bool | None = None,
        **controls: Any,
    ) -> alt.TopLevelMixin:
        """Figure ``name`` as an Altair chart: the spec the site draws, with its controls
        (sliders and menus), opening on ``layer`` and ``head`` (0-based) and on any other
        control by the name the site's links use (``sort_idx``, ``observation``, ``eps``,
        ``positions_from``). It displays inline in a notebook and saves with ``.save()``.

        ``sentence``: the sentence of a sentence page's figure (default: the one the site
        draws it for: the scaling sentence for the intervention grids, else 0); None for
        a figure of the whole set (``set-...``). ``every_view``: carry the rows of every
        layer (or other view), so every control works as on the site (True), only the
        chosen view's, with the controls that pick a view fixed (False), or every view's
        up to ``api.figures.EVERY_VIEW_ROWS`` rows (None)."""
        from attnreport.api.figures import figure_chart

        chosen = {"layer": layer, "head": head, **controls}
        given = {k: v for k, v in chosen.items() if v is not None}
        return figure_chart(self.results, name, sentence, given, every_view)


def load(path: str | Path) -> Study | list[Study]:
    """Read a results folder: ``attnreport analyze --out``'s, ``Study.save``'s, a site's
    ``results/`` (``render.json`` kept: ``render`` draws with its options). A folder of
    several models (``models.json``: ``analyze`` of several, a comparison site's
    ``results/``) gives a list, one study per model in order, which ``render`` draws as
    that comparison. Needs no torch. ``AttnReportError`` (one line) for a folder that is
    missing, incomplete or of a newer schema."""
    from attnreport.multi.folders import results_folders

    top = Path(path)
    if not top.is_dir():
        raise AttnReportError(f"results folder {top} does not exist")
    folders = results_folders([top])
    studies = [_read(folder, top) for folder in folders]
    return studies[0] if len(studies) == 1 and folders[0] == top else studies


def _read(folder: Path, top: Path) -> Study:
    """The study of ``folder`` with the render options ``attnreport render TOP`` would use
    (``top``: the folder given): those of ``top``, else its own (a comparison site keeps
    the comparison's at its top, and each model's report's beside its results)."""
    files = results_files(folder)
    for where in (top, folder):
        options = where / OPTIONS_NAME
        if options.is_file():
            files[OPTIONS_NAME] = options.read_bytes()
            break
    return Study(files, f"{folder}/")
