"""Turn an Altair chart plus its rows into a ``Figure``: validate, chunk, make the static view."""

from __future__ import annotations

import copy
import re
from collections.abc import Sequence
from typing import Any

import altair as alt

from attnreport.charts.figure import Columns, Figure
from attnreport.charts.theme import configure

SAFE_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*$")


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


def columns_to_rows(columns: Columns) -> list[dict[str, Any]]:
    """Column arrays -> one dict per row (for the static spec only)."""
    names = list(columns)
    return [dict(zip(names, values, strict=True)) for values in zip(*columns.values(), strict=True)]


def to_spec(chart: alt.TopLevelMixin, key: str) -> dict[str, Any]:
    """Validated Vega-Lite dict of a chart that reads the named dataset ``key``."""
    # resize: re-run the layout when rows arrive after the first render (chunks, inline rows)
    autosize = alt.AutoSizeParams(type="pad", resize=True)
    spec = configure(chart.properties(autosize=autosize)).to_dict(validate=True)
    if spec.get("data") != {"name": key}:
        raise ValueError(f"figure {key}: the top-level data must be {{'name': {key!r}}}")
    return spec


def static_view(spec: dict[str, Any], inline: Columns) -> dict[str, Any]:
    """The spec with its named dataset replaced by the default view's rows, for vl-convert."""
    static = copy.deepcopy(spec)
    static["data"] = {"values": columns_to_rows(inline)}
    return static


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
    renderer: str = "svg",
) -> Figure:
    """A Figure from a chart and either all its ``rows`` or ``chunks`` keyed by param values.

    chunks: (value of params[0], value of params[1], ...) -> rows; ``default`` picks the
    chunk inlined in the page. Without chunks, ``rows`` are all inlined.
    """
    if not SAFE_NAME.match(key):
        raise ValueError(f"figure key {key!r} is not [a-z0-9_-]")
    spec = to_spec(chart, key)
    if not chunks:
        inline = rows or {}
        return Figure(
            key=key,
            title=title,
            caption=caption,
            spec=spec,
            inline=inline,
            static_spec=static_view(spec, inline),
            renderer=renderer,
        )
    names = {values: chunk_name(params, values) for values in chunks}
    inline = chunks[default]
    return Figure(
        key=key,
        title=title,
        caption=caption,
        spec=spec,
        inline=inline,
        chunks={names[values]: cols for values, cols in chunks.items()},
        chunk_param=params[0] if len(params) == 1 else None,
        chunk_names={chunk_key(values): name for values, name in names.items()},
        inline_chunk=names[default],
        static_spec=static_view(spec, inline),
        chunk_params=params,
        renderer=renderer,
    )
