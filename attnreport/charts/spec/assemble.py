"""Turn an Altair chart plus its rows into a ``Figure``: validate, chunk, make the static view."""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import altair as alt

from attnreport.charts.figure import SAFE_NAME, Columns, Figure
from attnreport.charts.spec.renderer import choose_renderer, page_spec
from attnreport.charts.spec.theme import STATIC_FONT, STATIC_SLACK, site_config
from attnreport.jsontypes import Row, VegaSpec

# Chunks with fewer rows than this are packed with their neighbours into one data file
# (consecutive param values, the default view's chunk always alone): a short sentence
# then has a few data files per figure instead of one per layer, and a long one keeps
# one per layer. Rows, not bytes, so that a figure and the figures that read its chunk
# files (``chunk_source``, same rows and fewer columns) pack the same way.
PACK_ROWS = 4096


def chunk_key(values: Sequence[Any]) -> str:
    """Join param values as the runtime does: ``String(v)`` joined with ``"|"``."""
    return "|".join(str(v) for v in values)


def chunk_name(params: Sequence[str], values: Sequence[Any]) -> str:
    """Readable file-safe chunk name: ints as ``<initial><value>`` ("l3-h2"), strings as is."""
    parts = [
        f"{p[0]}{v}" if isinstance(v, int) else str(v) for p, v in zip(params, values, strict=True)
    ]
    name = "-".join(parts)
    if not SAFE_NAME.match(name):
        raise ValueError(f"chunk name {name!r} is not [a-z0-9_-]")
    return name


def pack_chunks(
    params: Sequence[str],
    chunks: dict[tuple[Any, ...], Columns],
    default: tuple[Any, ...],
    limit: int = PACK_ROWS,
) -> tuple[dict[tuple[Any, ...], str], dict[str, Columns]]:
    """Group ``chunks`` (in key order) into data files of about ``limit`` rows or more.

    Returns (param values -> data file name, data file name -> its rows). A group is a
    run of consecutive keys, closed once it holds ``limit`` rows; the ``default`` chunk
    is a group of its own, so the page inlines exactly one file's rows. A group of one
    key keeps that key's name (``l3``); a longer one is named by its first and last
    (``l4-to-l9``). The runtime inserts a file's rows once, whichever key asked for it,
    and the specs filter by their params, so a file may hold several keys' rows.
    """
    groups: list[list[tuple[Any, ...]]] = []
    open_rows = limit  # rows in the last group; >= limit: start a new one
    for values in sorted(chunks, key=_sort_key):
        rows = _row_count(chunks[values])
        if values == default or open_rows >= limit:
            groups.append([values])
            open_rows = rows if values != default else limit
        else:
            groups[-1].append(values)
            open_rows += rows
    names: dict[tuple[Any, ...], str] = {}
    packed: dict[str, Columns] = {}
    for group in groups:
        first, last = chunk_name(params, group[0]), chunk_name(params, group[-1])
        name = first if len(group) == 1 else f"{first}-to-{last}"
        packed[name] = _concat([chunks[v] for v in group])
        names.update({v: name for v in group})
    return names, packed


def _sort_key(values: tuple[Any, ...]) -> tuple[tuple[int, Any], ...]:
    return tuple((0, v) if isinstance(v, int) else (1, str(v)) for v in values)


def _row_count(columns: Columns) -> int:
    return max((len(v) for v in columns.values()), default=0)


def _concat(parts: list[Columns]) -> Columns:
    if len(parts) == 1:
        return parts[0]
    return {name: [v for part in parts for v in part[name]] for name in parts[0]}


def columns_to_rows(columns: Columns) -> list[Row]:
    """Column arrays -> one dict per row (for the static spec only)."""
    names = list(columns)
    return [dict(zip(names, values, strict=True)) for values in zip(*columns.values(), strict=True)]


def to_spec(chart: alt.TopLevelMixin, key: str) -> VegaSpec:
    """Vega-Lite dict of a chart that reads the named dataset ``key``.

    Not validated against the Vega-Lite schema here: that took a quarter of ``render``,
    and the specs depend only on the builders, not on the numbers, so the tests validate
    every builder's specs (``tests/test_charts.py``) instead of every build.
    """
    spec = chart.to_dict(validate=False)
    # resize: re-run the layout when rows arrive after the first render (chunks, inline rows)
    spec["autosize"] = {"resize": True, "type": "pad"}
    spec["config"] = site_config()  # what theme.configure adds, without copying the chart
    if spec.get("data") != {"name": key}:
        raise ValueError(f"figure {key}: the top-level data must be {{'name': {key!r}}}")
    return spec


def interaction_only(layer: VegaSpec) -> bool:
    """Whether a layer draws nothing (mark opacity 0): it is there to catch the pointer."""
    mark = layer.get("mark")
    return isinstance(mark, dict) and mark.get("opacity") == 0


def _each_dict(node: Any, visit: Callable[[VegaSpec], None]) -> None:
    """Call ``visit`` on every dict in ``node`` (a spec), a dict before what it then holds."""
    if isinstance(node, list):
        for item in node:
            _each_dict(item, visit)
    elif isinstance(node, dict):
        visit(node)
        for value in node.values():
            _each_dict(value, visit)


def _drop_layers(node: Any, dropped: set[str], params: set[str]) -> None:
    """Remove interaction-only layers everywhere in ``node``; collect their names and params."""

    def visit(view: VegaSpec) -> None:
        if not isinstance(view.get("layer"), list):
            return
        for layer in (layer for layer in view["layer"] if interaction_only(layer)):
            dropped.add(layer.get("name", ""))
            params.update(p["name"] for p in layer.get("params", []))
        view["layer"] = [layer for layer in view["layer"] if not interaction_only(layer)]

    _each_dict(node, visit)


def _drop_params(node: Any, dropped: set[str], params: set[str]) -> None:
    """Remove params defined for dropped views only (Altair lifts a layer's params to the top)."""

    def visit(view: VegaSpec) -> None:
        if not isinstance(view.get("params"), list):
            return
        kept = []
        for param in view["params"]:
            views = param.get("views")
            if views and set(views) <= dropped:
                params.add(param["name"])
            else:
                kept.append(param)
        view["params"] = kept
        if not kept:
            del view["params"]

    _each_dict(node, visit)


def _resolve_conditions(node: Any, params: set[str]) -> Any:
    """Channel definitions whose conditions test removed selections, as they are drawn while
    the selection is empty (the static view): a condition with ``empty`` true (the default)
    then holds, one with ``empty`` false does not."""
    if isinstance(node, list):
        return [_resolve_conditions(item, params) for item in node]
    if not isinstance(node, dict):
        return node
    node = {key: _resolve_conditions(value, params) for key, value in node.items()}
    if "condition" not in node:
        return node
    conditions = node["condition"] if isinstance(node["condition"], list) else [node["condition"]]
    kept = []
    for condition in conditions:
        if not (isinstance(condition, dict) and condition.get("param") in params):
            kept.append(condition)
        elif condition.get("empty", True):
            holds = {k: v for k, v in condition.items() if k not in ("param", "empty")}
            return {**holds, **({"condition": kept} if kept else {})}
    rest = {key: value for key, value in node.items() if key != "condition"}
    return {**rest, **({"condition": kept} if kept else {})}


def _plain_marks(node: Any) -> None:
    """Leave out what only serves the pointer: tooltips and the points laid over lines."""
    if isinstance(node, list):
        for item in node:
            _plain_marks(item)
        return
    if not isinstance(node, dict):
        return
    encoding, mark = node.get("encoding"), node.get("mark")
    if isinstance(encoding, dict):
        encoding.pop("tooltip", None)
    if isinstance(mark, dict):
        mark.pop("tooltip", None)
        if mark.get("type") == "line":
            mark.pop("point", None)
    for key, value in node.items():
        if key != "data":
            _plain_marks(value)


def static_view(spec: VegaSpec, inline: Columns) -> VegaSpec:
    """The spec with its named dataset replaced by the default view's rows, for vl-convert.

    The image is for reading and printing, not for the pointer, so it leaves out:
    interaction-only layers (``interaction_only``), with the selections they defined
    (channels that tested them take their empty-selection value); tooltips and the points
    over lines (hover targets; the lines are drawn alone); and ARIA attributes, which in an
    SVG repeat every mark's fields as text (the page's ``<img>`` has its own alt text). Its
    text is set in the fonts it is measured with (``theme.STATIC_FONT``), with room on the
    right for a wider one (``theme.STATIC_SLACK``).
    """
    static = copy.deepcopy(spec)
    static["data"] = {"values": columns_to_rows(inline)}
    dropped: set[str] = set()
    params: set[str] = set()
    _drop_layers(static, dropped, params)
    if dropped:
        _drop_params(static, dropped, params)
        static = _resolve_conditions(static, params)
    _plain_marks(static)
    static["config"] = {**_static_fonts(static.get("config", {})), "aria": False}
    static["config"]["font"] = STATIC_FONT  # also where no style names a font
    static["padding"] = {"left": 5, "top": 5, "right": 5 + STATIC_SLACK, "bottom": 5}
    return static


def _static_fonts(node: Any) -> Any:
    """A spec's config with every font named in it replaced by the one the static image is
    measured and drawn with (``theme.STATIC_FONT``, not the page's ``theme.FONT``)."""
    if isinstance(node, list):
        return [_static_fonts(item) for item in node]
    if not isinstance(node, dict):
        return node
    return {k: STATIC_FONT if k == "font" else _static_fonts(v) for k, v in node.items()}


def build_figure(
    *,
    key: str,
    title: str,
    caption: str,
    chart: alt.TopLevelMixin,
    rows: Columns | None = None,
    chunks: dict[tuple[Any, ...], Columns] | None = None,
    params: tuple[str, ...] = (),
    default: tuple[Any, ...] = (),
    chunk_source: str | None = None,
    first_rows: Columns | None = None,
    phone_chart: alt.TopLevelMixin | None = None,
) -> Figure:
    """A Figure from a chart and either all its ``rows`` or ``chunks`` keyed by param values.

    chunks: (value of params[0], value of params[1], ...) -> rows; ``default`` picks the
    chunk inlined in the page. Without chunks, ``rows`` are all inlined. With
    ``chunk_source`` (the key of a figure built from chunks with the same keys, whose rows
    hold every column this one reads), only the default chunk is kept, as ``inline``: the
    others are read from the source's chunk files. With ``first_rows``, the page inlines
    only those rows (a part of the default view) and marks no chunk as inlined: the
    runtime loads the default chunk, which must not repeat them, after the first draw.
    ``phone_chart``: the chart a phone's column draws instead (the same rows and params).

    The page draws it with the renderer ``renderer.choose_renderer`` picks from the marks
    of that first view (SVG, or a canvas past ``renderer.CANVAS_MARKS``); the static spec
    does not depend on it.
    """
    for name in (key, chunk_source or key):
        if not SAFE_NAME.match(name):
            raise ValueError(f"figure key {name!r} is not [a-z0-9_-]")
    spec = to_spec(chart, key)
    inline = (rows or {}) if not chunks else chunks[default] if first_rows is None else first_rows
    renderer = choose_renderer(spec, inline)
    drawn = Figure(
        key=key,
        title=title,
        caption=caption,
        spec=page_spec(spec, renderer),
        inline=inline,
        static_spec=static_view(spec, inline),
        renderer=renderer,
        phone_spec=None if phone_chart is None else page_spec(to_spec(phone_chart, key), renderer),
    )
    if not chunks:
        return drawn
    names, packed = pack_chunks(params, chunks, default)
    return replace(
        drawn,
        chunks={} if chunk_source else packed,
        chunk_param=params[0] if len(params) == 1 else None,
        chunk_names={chunk_key(values): name for values, name in names.items()},
        inline_chunk=names[default] if first_rows is None else None,
        chunk_params=params,
        chunk_source=chunk_source,
    )
