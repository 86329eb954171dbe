"""The value a chart builder hands to the page renderer.

A figure's Vega-Lite spec reads one named dataset, ``data: {"name": figure.key}``.
Rows are sent as column arrays (``Columns``), never one JSON object per row: the page
runtime (``assets/attnreport.js``) turns them into rows in the browser.

The rows for the default view are inlined in the page (``inline``). Rows for other
values of the figure's ``chunk_param`` (usually ``layer``) live in ``chunks``, written as
small ``.js`` files that the runtime loads with a script tag when the widget asks for
them (script tags work from ``file://``; ``fetch`` does not) and inserts into the
dataset. The spec filters the dataset by the widget's parameter, so rows for several
layers can share it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Columns = dict[str, list[Any]]  # column name -> values; every column has the same length


@dataclass(frozen=True)
class Figure:
    key: str  # stable id unique within a page, [a-z0-9-]; also the dataset name
    title: str
    caption: str  # plain text: what the reader should look at
    spec: dict[str, Any]  # Vega-Lite spec (Altair ``to_dict()``), data = {"name": key}
    inline: Columns  # rows of the default view
    chunks: dict[str, Columns] = field(default_factory=dict)  # chunk name -> rows
    chunk_param: str | None = None  # Vega-Lite param whose value selects a chunk
    chunk_names: dict[str, str] = field(default_factory=dict)  # str(param value) -> chunk name
    inline_chunk: str | None = None  # the chunk name already covered by ``inline``
    static_spec: dict[str, Any] | None = None  # default view with inline values for vl-convert
