"""The value a chart builder hands to the page renderer.

A figure's Vega-Lite spec reads one named dataset, ``data: {"name": figure.key}``.
Rows are sent as column arrays (``Columns``), never one JSON object per row: the page
runtime (``attnreport/charts/runtime.js``) turns them into rows in the browser.

The rows for the default view are inlined in the page (``inline``). Rows for other
values of the figure's chunk parameters live in ``chunks``, written as small ``.js``
files that the runtime loads with a script tag when a widget asks for them (script tags
work from ``file://``; ``fetch`` does not) and inserts into the dataset. The spec filters
the dataset by the widgets' parameters, so rows of several chunks can share it.

Chunk selection (extended from the first contract, which had one ``chunk_param``):
``chunk_params`` names one or more Vega-Lite params, e.g. ``("layer", "head")``. A chunk is
found by joining the params' current values, each as JavaScript ``String(value)`` would
write it, with ``"|"``: ``chunk_names["3|2"] -> "l3-h2"``. Param values that select chunks
are ints or strings, so Python's ``str`` writes them the same way. ``chunk_param`` is kept
and equals ``chunk_params[0]`` when there is exactly one; read ``selecting_params``.

Every chunk, the default one included, is in ``chunks``; ``inline`` equals
``chunks[inline_chunk]``. A figure that draws rows another figure of the same page
already sends (bias vs position reads the attention breakdown's rows) names that figure
in ``chunk_source`` and has no chunk files of its own (``chunks`` is empty): its
``chunk_names`` are the source's, the runtime loads the source's files, once for both,
and ``inline`` holds the default chunk's rows, restricted to the columns it draws.
``renderer`` ("svg" or "canvas") is the Vega renderer the page
should use: ``build_figure`` sets it with ``charts.renderer.choose_renderer`` (a canvas
for a default view of more than ``CANVAS_MARKS`` marks).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from attnreport.jsontypes import VegaSpec

SAFE_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*$")  # dataset and column-file names in specs

Columns = dict[str, list[Any]]  # column name -> values; every column has the same length


@dataclass(frozen=True)
class Figure:
    key: str  # stable id unique within a page, [a-z0-9-]; also the dataset name
    title: str
    caption: str  # plain text: what the reader should look at
    spec: VegaSpec  # Vega-Lite spec (Altair ``to_dict()``), data = {"name": key}
    inline: Columns  # rows of the default view
    chunks: dict[str, Columns] = field(default_factory=dict)  # chunk name -> rows
    chunk_param: str | None = None  # Vega-Lite param whose value selects a chunk
    chunk_names: dict[str, str] = field(default_factory=dict)  # "v1|v2" param values -> chunk
    inline_chunk: str | None = None  # the chunk name already covered by ``inline``
    static_spec: VegaSpec | None = None  # default view with inline values for vl-convert
    chunk_params: tuple[str, ...] = ()  # params whose joined values select a chunk
    renderer: str = "svg"  # Vega renderer for the page: "svg" or "canvas"
    chunk_source: str | None = None  # key of the figure on the page whose chunk files it reads
    note: str = ""  # one sentence the page shows in the figure: a plotted quantity that is
    # identically zero for this model (and why), in place of a chart of nothing
    # the Vega-Lite spec the page draws instead of ``spec`` in a phone's column (same
    # data set and params; None: ``spec`` fitted to the phone, ``runtime_layout.js``)
    phone_spec: VegaSpec | None = None
    # its chunks are results files the site already holds (a sentence's map parts,
    # ``results.map_parts``): each chunk name is the part's ident, read under the site's
    # ``results/``; the site writes no data files for it (the one copy of every map)
    results_chunks: bool = False

    @property
    def selecting_params(self) -> tuple[str, ...]:
        """The params that select a chunk, in the order their values are joined."""
        if self.chunk_params:
            return self.chunk_params
        return (self.chunk_param,) if self.chunk_param else ()


@dataclass(frozen=True)
class Encoded:
    """What a page writes for one figure: its payload JSON (``embed.figure_payload``) and
    its data files (``embed.chunk_files``: file name -> JS source)."""

    payload: str
    chunk_files: dict[str, str]
