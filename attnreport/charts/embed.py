"""Serialise a Figure for a static page: the inline payload and the on-demand chunk files.

DOM protocol (what the page renders for each figure, in this order)::

    <div class="ar-chart" id="ar-chart-KEY" data-key="KEY" data-chunks="RELATIVE/DIR/"></div>
    <script type="application/json" id="ar-data-KEY">PAYLOAD</script>

``PAYLOAD`` is ``figure_payload(fig)``; ``RELATIVE/DIR/`` (ending in "/") is where the
files of ``chunk_files(fig)`` are written, relative to the page. Before these, the page
loads two classic scripts (no ``type="module"``): the Vega bundle
(``vl_convert.javascript_bundle()``, which defines ``window.vegaEmbed``, ``window.vega``
and ``window.vegaLite``) and ``runtime.js`` (``runtime_js()`` returns its text). Both work
from ``file://``. The bundle declares top-level ``const`` names, so other classic scripts
must keep their names in a function scope (or wrap the bundle in one, which also works).

The runtime, on DOMContentLoaded, for every ``.ar-chart``: parses its payload, decodes the
columns into row objects, calls ``vegaEmbed(el, spec, {renderer, actions: {export: true,
source: false, compiled: false, editor: false}})`` with the inline rows given as the
spec's top-level ``datasets[KEY]`` (Vega-Lite keeps the name, so the first render has
data and later ``view.insert(KEY, rows)`` calls add to the same dataset) and, after the
first render, sets ``el.dataset.rendered = "true"`` and increments
``document.body.dataset.chartsReady``. When a chunk param changes to a value whose chunk is
not loaded yet, it adds ``<script src="DIR/KEY--CHUNK.js">`` and shows "loading..." in
``.ar-status`` (a sibling after the chart div; ``el.dataset.loading`` is "true" meanwhile).
A chunk file calls ``window.attnreport.register("KEY--CHUNK", COLUMNS)``; on load the
runtime inserts those rows. On failure ``data-rendered`` is "error".

Shared chunks: a payload whose ``chunk_source`` is the key SOURCE of another figure on
the page loads ``<script src="SOURCE_DIR/SOURCE--CHUNK.js">``, SOURCE_DIR being the
``data-chunks`` of ``#ar-chart-SOURCE`` (its own ``data-chunks``, which it then lacks,
is not needed). Every chunk file is loaded at most once per page: the runtime keeps what
it registered and gives the rows to every chart that asks for that id.

Payload (JSON object)::

    {"key": KEY, "spec": VEGA_LITE, "renderer": "svg"|"canvas",
     "inline": COLUMNS, "inline_chunk": CHUNK|null,
     "chunk_params": [PARAM, ...], "chunks": {"V1|V2": CHUNK, ...},
     "chunk_source": SOURCE|null}

``COLUMNS`` maps a column name to either a plain array or a compressed one:
``{"r": [v0, n0, v1, n1, ...]}`` (value v0 repeated n0 times, then v1 n1 times ...) or
``{"d": [d0, n0, ...]}`` (the same run-length form of the differences of an integer
column, whose first value is d0: cumulative sums give the values). ``decode_columns``
is the reference decoder; ``runtime.js`` mirrors it.

Escaping: the JSON is ASCII-only (``ensure_ascii``: U+2028, U+2029, lone surrogates and
every non-ASCII character become ``\\uXXXX``) and ``<``, ``>``, ``&`` are written as
``\\u003c``, ``\\u003e``, ``\\u0026``, so no token text can close the script element or
open a comment; ``JSON.parse`` gives back the same text.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

import numpy as np

from attnreport.charts.assemble import SAFE_NAME
from attnreport.charts.figure import Columns, Figure
from attnreport.text import script_json as script_safe_json


def _compact(value: Any) -> Any:
    """Integral floats as ints ("0" instead of "0.0"), booleans as 0/1; others unchanged."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    return value


def _plain(values: list[Any]) -> list[Any]:
    """``_compact`` applied to every value, with fast paths for all-int and all-float columns."""
    kinds = {type(v) for v in values}
    if kinds <= {int}:
        return list(values)
    if kinds <= {float}:
        return [int(v) if v.is_integer() and abs(v) < 2**53 else v for v in values]
    return [_compact(v) for v in values]


def _runs(values: list[Any]) -> list[Any]:
    """Run-length form [v0, n0, v1, n1, ...] (equal values, as JSON writes them, form a run)."""
    if not values:
        return []
    array = np.asarray(values, dtype=object)
    starts = np.flatnonzero(np.concatenate([[True], array[1:] != array[:-1]]))
    counts = np.diff(np.append(starts, len(values)))
    out: list[Any] = []
    for start, count in zip(starts.tolist(), counts.tolist(), strict=True):
        out += [values[start], count]
    return out


def _json_size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":")))


def encode_column(values: list[Any]) -> list[Any] | dict[str, list[Any]]:
    """The shortest of: plain array, run-length ``{"r"}``, delta run-length ``{"d"}``."""
    plain = _plain(values)
    candidates: list[Any] = [plain]
    runs = _runs(plain)
    if len(runs) < len(plain):
        candidates.append({"r": runs})
    if plain and {type(v) for v in plain} == {int}:
        deltas = np.diff(np.asarray(plain, dtype=np.int64), prepend=0).tolist()
        delta_runs = _runs(deltas)
        if len(delta_runs) < len(plain):
            candidates.append({"d": delta_runs})
    return min(candidates, key=_json_size)


def encode_columns(columns: Columns) -> dict[str, Any]:
    """Every column encoded with ``encode_column``."""
    return {name: encode_column(list(values)) for name, values in columns.items()}


def decode_column(encoded: list[Any] | dict[str, list[Any]]) -> list[Any]:
    """Inverse of ``encode_column`` (the reference for ``runtime.js``)."""
    if isinstance(encoded, list):
        return list(encoded)
    runs = encoded.get("r", encoded.get("d", []))
    values = [v for v, n in zip(runs[::2], runs[1::2], strict=True) for _ in range(n)]
    if "d" not in encoded:
        return values
    total, out = 0, []
    for delta in values:
        total += delta
        out.append(total)
    return out


def decode_columns(encoded: dict[str, Any]) -> Columns:
    """Inverse of ``encode_columns``."""
    return {name: decode_column(values) for name, values in encoded.items()}


def payload_dict(fig: Figure) -> dict[str, Any]:
    """The payload object before serialisation (see the module docstring)."""
    return {
        "key": fig.key,
        "spec": fig.spec,
        "renderer": fig.renderer,
        "inline": encode_columns(fig.inline),
        "inline_chunk": fig.inline_chunk,
        "chunk_params": list(fig.selecting_params),
        "chunks": dict(fig.chunk_names),
        "chunk_source": fig.chunk_source,
    }


def figure_payload(fig: Figure) -> str:
    """The JSON text to place inside ``<script type="application/json" id="ar-data-KEY">``."""
    return script_safe_json(payload_dict(fig))


def chunk_file_name(key: str, chunk: str) -> str:
    """``<figure-key>--<chunk>.js``; both parts are checked to be [a-z0-9_-]."""
    for part in (key, chunk):
        if not SAFE_NAME.match(part):
            raise ValueError(f"unsafe name in a chunk file name: {part!r}")
    return f"{key}--{chunk}.js"


def chunk_files(fig: Figure) -> dict[str, str]:
    """File name -> JS source registering that chunk's columns, for every chunk."""
    out = {}
    for chunk, columns in fig.chunks.items():
        name = chunk_file_name(fig.key, chunk)
        ident = script_safe_json(name[: -len(".js")])
        out[name] = (
            f"window.attnreport.register({ident}, {script_safe_json(encode_columns(columns))});\n"
        )
    return out


def runtime_js() -> str:
    """The source of ``runtime.js``, to be copied next to the pages."""
    return resources.files("attnreport.charts").joinpath("runtime.js").read_text(encoding="utf-8")
