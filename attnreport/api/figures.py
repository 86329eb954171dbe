"""A study's figure as an Altair chart: the spec the site draws, with its controls.

The site's figures come from one registry (``charts.registry.FIGURES``), each built
from the results as a ``Figure``: its Vega-Lite spec reads one named dataset, whose rows
the page loads view by view (``Figure.chunks``, keyed by the params that select them,
e.g. ``layer``) as a widget asks for them. Here the same spec is given its rows up front,
in ``datasets``, and its params open on the view asked for (``layer``, ``head`` and the
other controls by the names the site's URL uses: ``sort_idx``, ``observation``, ``eps``,
``positions_from``). The chart then displays inline wherever Altair does (Jupyter,
JupyterLab, VS Code: the ``application/vnd.vegalite.v6+json`` bundle with Altair 6) and
saves with Altair's own ``.save()``.

Which rows: every view's, so that every control works as on the site, when they number
at most ``EVERY_VIEW_ROWS``; past that (the maps of a long sentence), the rows of the
chosen view only, and the controls that select a view (the site's chunk params) are
fixed at the chosen value rather than offering views with no rows (``every_view``
decides it either way).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from attnreport.charts.figure import Columns, Figure
from attnreport.charts.registry import FIGURES, entry_of, page_inputs, place
from attnreport.charts.spec.assemble import chunk_key, columns_to_rows
from attnreport.errors import AttnReportError
from attnreport.jsontypes import VegaSpec
from attnreport.results import Results

if TYPE_CHECKING:
    import altair as alt

# Rows a chart carries for all its views: a 12-token sentence's attention maps in a model
# of 270 heads (SmolLM2-135M), about 2 MB of JSON; each display in a notebook stores it.
EVERY_VIEW_ROWS = 25_000
LAYOUTS = ("layer", "hconcat", "vconcat", "concat", "facet", "repeat")


def figure_names(results: Results, sentence: int | None = None) -> tuple[str, ...]:
    """The figures ``figure_chart`` draws, in the site's order: for ``sentence``, those of
    its page; without one, the index's and each drawn on some sentence's page."""
    pages: list[int | None] = [None, *range(len(results.sentences))]
    if sentence is not None:
        _check_sentence(results, sentence)
        pages = [sentence]
    drawn = []
    for entry in FIGURES:
        for page in pages:
            on_index = entry.page == "index"
            if on_index == (page is None) and entry.when(page_inputs(results, page)):
                drawn.append(entry.key)
                break
    return tuple(drawn)


def figure_chart(
    results: Results,
    name: str,
    sentence: int | None = None,
    controls: Mapping[str, Any] | None = None,
    every_view: bool | None = None,
) -> alt.TopLevelMixin:
    """Figure ``name`` as an Altair chart opening on ``controls`` (param name -> value).

    ``sentence``: the sentence of a sentence page's figure (default: the one the site
    draws it for: the scaling sentence for the intervention grids, else 0); None for an
    index figure. ``every_view``: the rows of every view (True), of the chosen one only
    (False), or every view's when there are at most ``EVERY_VIEW_ROWS`` (None)."""
    figure, source = built_figure(results, name, sentence)
    spec = copy.deepcopy(figure.spec)
    params = top_params(spec)
    default = tuple(params[p]["value"] for p in figure.selecting_params)
    for control, value in (controls or {}).items():
        set_control(params, name, control, value)
    chosen = tuple(params[p]["value"] for p in figure.selecting_params)
    every = every_rows(figure, source)
    if every_view is None:
        every_view = _count(every) <= EVERY_VIEW_ROWS
    rows = every if every_view else view_rows(figure, source, chosen, default)
    if not every_view:
        for param in figure.selecting_params:
            params[param].pop("bind", None)  # a control that would select a view with no rows
    spec["usermeta"] = {**spec.get("usermeta", {}), "embedOptions": {"renderer": figure.renderer}}
    return chart_of(spec, columns_to_rows(rows))


def built_figure(results: Results, name: str, sentence: int | None) -> tuple[Figure, Figure]:
    """(figure ``name`` as the site builds it, the figure whose rows it reads: itself, or
    its ``chunk_source``)."""
    entry = entry_of(name)
    if entry is None:
        known = ", ".join(figure_names(results))
        raise AttnReportError(f"no figure {name!r}; this study's figures: {known}")
    if entry.page == "index":
        if sentence is not None:
            raise AttnReportError(f"{name} is drawn over the whole sentence set: give no sentence")
        inputs = page_inputs(results, None)
    else:
        sentence = _default_sentence(results, name) if sentence is None else sentence
        _check_sentence(results, sentence)
        inputs = page_inputs(results, sentence)
    if not entry.when(inputs):
        raise AttnReportError(f"{name} is not drawn for {_where(results, name, sentence)}")
    figure = place(entry, inputs).figure
    source_entry = entry_of(figure.chunk_source) if figure.chunk_source else None
    source = place(source_entry, inputs).figure if source_entry is not None else figure
    return figure, source


def _default_sentence(results: Results, name: str) -> int:
    """The sentence the site draws ``name`` for: the scaling sentence for the grids, else 0."""
    grids = results.interventions is not None and name in ("scaling-grid", "mean-grid")
    return results.interventions.scaling.sentence if grids else 0  # type: ignore[union-attr]


def _where(results: Results, name: str, sentence: int | None) -> str:
    """The reason a figure is not drawn, as the rest of a sentence."""
    if sentence is None:
        return "this study (its results predate the tables it draws)"
    if results.interventions is not None and name in ("scaling-grid", "mean-grid"):
        scaled = results.interventions.scaling.sentence
        return f"sentence {sentence}: the intervention grids are drawn for sentence {scaled}"
    return f"sentence {sentence} (a sentence longer than map_tokens keeps no attention map)"


def _check_sentence(results: Results, sentence: int) -> None:
    count = len(results.sentences)
    if isinstance(sentence, bool) or not isinstance(sentence, int) or not 0 <= sentence < count:
        raise AttnReportError(
            f"sentence {sentence!r} does not exist: the study has sentences 0-{count - 1}"
        )


def top_params(spec: VegaSpec) -> dict[str, dict[str, Any]]:
    """The spec's top-level params by name (Altair lifts a chart's params there)."""
    return {p["name"]: p for p in spec.get("params", []) if isinstance(p, dict) and "name" in p}


def set_control(params: dict[str, dict[str, Any]], name: str, control: str, value: Any) -> None:
    """Open the widget ``control`` on ``value``; one line when the figure has no such
    widget or ``value`` is not one of its values."""
    bind = params.get(control, {}).get("bind")
    if not isinstance(bind, dict):
        widgets = ", ".join(p for p, v in params.items() if isinstance(v.get("bind"), dict))
        raise AttnReportError(f"{name} has no {control} control; its controls: {widgets or 'none'}")
    if "options" in bind:
        if value not in bind["options"]:
            options = ", ".join(repr(o) for o in bind["options"])
            raise AttnReportError(f"{name}: {control} must be one of {options}; got {value!r}")
    elif not _in_range(value, bind):
        raise AttnReportError(
            f"{name}: {control} must be {bind['min']}-{bind['max']} "
            f"in steps of {bind.get('step', 1)}; got {value!r}"
        )
    params[control]["value"] = value


def _in_range(value: Any, bind: dict[str, Any]) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    low, high, step = bind["min"], bind["max"], bind.get("step", 1)
    return low <= value <= high and float((value - low) / step).is_integer()


def every_rows(figure: Figure, source: Figure) -> Columns:
    """The rows of every view: the source's chunks (and its inline rows when no chunk
    repeats them), restricted to the columns ``figure`` draws."""
    parts = list(source.chunks.values())
    if source.inline_chunk is None or not parts:
        parts = [source.inline, *parts]
    return _columns(parts, figure)


def view_rows(
    figure: Figure, source: Figure, chosen: tuple[Any, ...], default: tuple[Any, ...]
) -> Columns:
    """The rows of the view ``chosen`` (values of ``figure.selecting_params``): those of
    the data file that holds it (and of the page's inline rows when that is the default
    view's) whose columns named like the params hold the chosen values (a file may pack
    several views)."""
    if not figure.selecting_params:
        return every_rows(figure, source)
    names = source.chunk_names
    file = names[chunk_key(chosen)]
    parts = [source.chunks[file]]
    if source.inline_chunk is None and file == names[chunk_key(default)]:
        parts.insert(0, source.inline)
    rows = _columns(parts, figure)
    keys = [(p, v) for p, v in zip(figure.selecting_params, chosen, strict=True) if p in rows]
    kept = [i for i in range(_count(rows)) if all(rows[p][i] == v for p, v in keys)]
    return {c: [values[i] for i in kept] for c, values in rows.items()}


def _columns(parts: list[Columns], figure: Figure) -> Columns:
    """The parts one after another, in the columns ``figure`` draws (its inline rows', or
    where it inlines none, as a map drawn from the results' parts, its first part's)."""
    drawn = list(figure.inline) or next((list(part) for part in parts if part), [])
    return {c: [v for part in parts if part for v in part[c]] for c in drawn}


def _count(rows: Columns) -> int:
    return max((len(values) for values in rows.values()), default=0)


def chart_of(spec: VegaSpec, rows: list[dict[str, Any]]) -> alt.TopLevelMixin:
    """The Altair chart of a top-level Vega-Lite spec (its class by its composition) that
    draws ``rows`` instead of its named dataset.

    The rows are handed to Altair as inline values (``{"values": rows}``), which its
    ``to_dict`` moves to the spec's ``datasets`` after validating the rest: validating
    every row would take seconds per thousand. The spec itself is not validated again
    here (every builder's spec is, by the tests)."""
    import altair as alt

    kinds = {
        "layer": alt.LayerChart,
        "hconcat": alt.HConcatChart,
        "vconcat": alt.VConcatChart,
        "concat": alt.ConcatChart,
        "facet": alt.FacetChart,
        "repeat": alt.RepeatChart,
    }
    kind = next((kinds[k] for k in LAYOUTS if k in spec), alt.Chart)
    chart = kind.from_dict(spec, validate=False)
    chart.data = {"values": rows}
    return chart
