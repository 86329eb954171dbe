"""Serialise a Figure for a static page: the inline payload and the on-demand chunk files.

DOM protocol (what the page renders for each figure, in this order)::

    <div class="ar-chart" id="ar-chart-KEY" data-key="KEY" data-chunks="RELATIVE/DIR/"></div>
    <script type="application/json" id="ar-data-KEY">PAYLOAD</script>

``PAYLOAD`` is ``figure_payload(fig)``; ``RELATIVE/DIR/`` (ending in "/") is where the
files of ``chunk_files(fig)`` are written, relative to the page. Before these, the page
loads two classic scripts (no ``type="module"``): the Vega bundle
(``vl_convert.javascript_bundle()``, which defines ``window.vegaEmbed``, ``window.vega``
and ``window.vegaLite``) and ``runtime.js`` (``runtime_js()`` returns its text, joined from the parts of
``RUNTIME_PARTS``). Both work
from ``file://``. The bundle declares top-level ``const`` names, so other classic scripts
must keep their names in a function scope (or wrap the bundle in one, which also works).

The runtime, on DOMContentLoaded, for every ``.ar-chart``: parses its payload, decodes the
columns into row objects, calls ``vegaEmbed(el, spec, {renderer, actions: {export: true,
source: false, compiled: false, editor: false}})`` with the inline rows as the ``values``
of the spec's data set named KEY (the spec is Vega, compiled from the figure's Vega-Lite
when the site was built: ``vega_spec.page_vega``; so the first render has data, and later
``view.insert(KEY, rows)`` calls add to the same data set) and, after the first render,
sets ``el.dataset.rendered = "true"`` and increments
``document.body.dataset.chartsReady``. When a chunk param changes to a value whose chunk
is not loaded yet, it adds ``<script src="DIR/KEY--CHUNK.js">`` and shows "loading..." in
``.ar-status`` (a sibling after the chart div; ``el.dataset.loading`` is "true" meanwhile).
A chunk file calls ``window.attnreport.register("KEY--CHUNK", COLUMNS)``; on load the
runtime inserts those rows. On failure ``data-rendered`` is "error".

Page state: the bound params ``layer``, ``head``, ``sort_idx``, ``observation``, ``eps``
and ``positions_from`` are state of the page, not of one chart. Before its first render a
chart's signal of that name opens on the page's value (from the URL hash, else the first
chart that has it, in page order, gives its default); moving any chart's control sets the
same signal in every other chart that has it (when the value fits that chart's control);
clicking a mark whose row has a numeric ``head`` (and ``layer``) sets them page-wide. The
state is written to the hash as ``#layer=L&head=H&...`` once a change has rested for
400 ms (``history.pushState``), and back, forward and an edited hash show the view of
their entry; a hash without ``=`` is a plain anchor and is left alone. A numeric value is
read as a number (``#eps=1e-3`` is the option 0.001). Before any chart draws, a hash value
no control of the page can show is brought to the nearest one every control of its name
can show (a slider's end or step: ``#layer=99`` is the last layer) or dropped (an option
no select has), and the URL is rewritten to the view shown. A chart opens on, and a
control moves to, a view only once the rows it shows are loaded (never an empty plot).
On an index, a click on a point or cell whose row has an ``href`` (a sentence page at
``#layer=L&head=H``: ``figures/links.py``) opens it. Each chart's ARIA label follows the
view it draws (``runtime_label.js``); ``window.attnreport.settled()`` resolves once every
chart is drawn and nothing is loading or being fitted.
``window.attnreport.state`` holds ``values`` and the drawn ``charts`` (``key``, ``view``).

Fitting the column: the stylesheet scales a chart wider than its figure down (SVG by its
viewBox, a canvas as an image; the runtime scales the pointer back for a canvas's
picking). A chart narrower than 700 px has its legends below the plot and every wrapped
facet (also one inside a concatenation) in two columns, one under 500 px; when a resize
changes that fit, the chart is drawn again (``el.dataset.fit`` is "wide", "narrow" or
"phone"). A chart still wider than its figure then shrinks its plots (the compiled spec's
numeric ``*_step``, ``*_width`` and ``*_height`` signals, not a wrapped facet's
``*_child_*``), not its text, to at most 0.3 of their size (``runtime_fit.js``); after
anything else resizes its view (a control, rows arriving) it is fitted again from its
compiled sizes, and a facet grid (``usermeta.relayout``) runs once more after its first
run, so that a view reached by the controls is drawn as the same view opened from its URL.

Shared chunks: a payload whose ``chunk_source`` is the key SOURCE of another figure on
the page loads ``<script src="SOURCE_DIR/SOURCE--CHUNK.js">``, SOURCE_DIR being the
``data-chunks`` of ``#ar-chart-SOURCE`` (its own ``data-chunks``, which it then lacks,
is not needed). Every chunk file is loaded at most once per page: the runtime keeps what
it registered and gives the rows to every chart that asks for that id. Such a payload's
``inline`` is null when it has an ``inline_chunk``: the same chunk is the source's inline
rows (the chunks are packed alike), so the runtime takes them from the source's payload
instead of the page carrying the default view's rows twice.

Payload (JSON object)::

    {"key": KEY, "spec": VEGA, "renderer": "svg"|"canvas",
     "inline": COLUMNS|null, "inline_chunk": CHUNK|null,
     "chunk_params": [PARAM, ...], "chunks": {"V1|V2": CHUNK, ...},
     "chunk_source": SOURCE|null, "phone": VEGA}

``results_chunks`` (only where true: the attention map of results of schema 10) says
that the chunks are results files the site already ships: a chunk's name is the id its
file registers (``sentences/NNN/lL``), loaded as ``DIR`` + that id + ``.js``, ``DIR``
being the site's ``results/`` folder (the figure's ``data-chunks``); the figure has no
data files of its own and its ``inline`` rows are empty (the default chunk loads first).

``phone`` (only in some payloads: the intervention grids) names the data file
``KEY--phone.js`` beside the chunk files, which registers (as ``"KEY--phone"``) the Vega
spec the runtime draws instead of ``spec`` when the chart is drawn for a phone ("phone"
fit, below 500 px): the same data set and params, laid out in one column. A page read on
a wider screen never loads it.

``COLUMNS`` maps a column name to either a plain array or a compressed one:
``{"r": [v0, n0, v1, n1, ...]}`` (value v0 repeated n0 times, then v1 n1 times ...),
``{"d": [d0, n0, ...]}`` (the same run-length form of the differences of an integer
column, whose first value is d0: cumulative sums give the values) or, for numbers only,
``{"b": [d, w, "BASE64"]}`` with an optional ``"x": [i0, v0, i1, v1, ...]`` (the signed
little-endian integers of w bytes in BASE64, each divided by ``10**d``, except that value
i0 is v0 ...; the integer slot of an exception holds 0). The encoding is that of
``attnreport.results.codec`` with ``binary=True``: the results files share the first
three forms, never the packed one. Every form gives back exactly the numbers of the plain
array (the packed one to the bit: ``attnreport.results.packed``). ``decode_columns`` is
the reference decoder; ``runtime.js`` mirrors it.

Escaping: the JSON is ASCII-only (``ensure_ascii``: U+2028, U+2029, lone surrogates and
every non-ASCII character become ``\\uXXXX``) and ``<``, ``>``, ``&`` are written as
``\\u003c``, ``\\u003e``, ``\\u0026``, so no token text can close the script element or
open a comment; ``JSON.parse`` gives back the same text.
"""

from __future__ import annotations

from importlib import resources
from typing import TypedDict

from attnreport.charts.export.vega_spec import page_vega
from attnreport.charts.figure import SAFE_NAME, Columns, Figure
from attnreport.jsontypes import Json, VegaSpec
from attnreport.results.codec import decode_column, encode_column
from attnreport.text import script_json as script_safe_json


class Payload(TypedDict, total=False):
    """A figure's inline payload as the page's runtime reads it (see the module docstring)."""

    key: str
    spec: VegaSpec
    renderer: str
    inline: Json | None  # encoded columns (``encode_columns``); None: the chunk source's
    inline_chunk: str | None
    chunk_params: list[str]
    chunks: dict[str, str]
    chunk_source: str | None
    phone: str  # only a figure with a phone's own spec (``Figure.phone_spec``): ``PHONE``
    results_chunks: bool  # only a figure whose chunks are results files (``Figure``)


def encode_columns(columns: Columns) -> Json:
    """Every column encoded with ``encode_column``, packed forms allowed: the data files
    and inline payloads of the site are about half the size of their JSON decimals."""
    return {name: encode_column(list(values), binary=True) for name, values in columns.items()}


def decode_columns(encoded: Json) -> Columns:
    """Inverse of ``encode_columns``."""
    return {name: decode_column(values) for name, values in encoded.items()}


def shares_inline(fig: Figure) -> bool:
    """Whether the page takes this figure's inline rows from its ``chunk_source``'s payload
    (the source inlines the same chunk, with every column this figure reads)."""
    return fig.chunk_source is not None and fig.inline_chunk is not None


def payload_dict(fig: Figure) -> Payload:
    """The payload object before serialisation (see the module docstring)."""
    payload: Payload = {
        "key": fig.key,
        "spec": page_vega(fig.spec, fig.key),
        "renderer": fig.renderer,
        "inline": None if shares_inline(fig) else encode_columns(fig.inline),
        "inline_chunk": fig.inline_chunk,
        "chunk_params": list(fig.selecting_params),
        "chunks": dict(fig.chunk_names),
        "chunk_source": fig.chunk_source,
    }
    if fig.phone_spec is not None:
        payload["phone"] = PHONE
    if fig.results_chunks:
        payload["results_chunks"] = True
    return payload


def figure_payload(fig: Figure) -> str:
    """The JSON text to place inside ``<script type="application/json" id="ar-data-KEY">``."""
    return script_safe_json(payload_dict(fig))


def chunk_file_name(key: str, chunk: str) -> str:
    """``<figure-key>--<chunk>.js``; both parts are checked to be [a-z0-9_-]."""
    for part in (key, chunk):
        if not SAFE_NAME.match(part):
            raise ValueError(f"unsafe name in a chunk file name: {part!r}")
    return f"{key}--{chunk}.js"


PHONE = "phone"  # the data file of a figure's phone spec: ``KEY--phone.js``


def chunk_files(fig: Figure) -> dict[str, str]:
    """File name -> JS source registering that chunk's columns, for every chunk; and the
    phone's spec (compiled) of a figure that has one."""
    out = {}
    own = {} if fig.results_chunks else fig.chunks  # results files: the site has them
    registered = {chunk: encode_columns(columns) for chunk, columns in own.items()}
    if fig.phone_spec is not None:
        registered[PHONE] = page_vega(fig.phone_spec, fig.key)
    for chunk, value in registered.items():
        name = chunk_file_name(fig.key, chunk)
        ident = script_safe_json(name[: -len(".js")])
        out[name] = f"window.attnreport.register({ident}, {script_safe_json(value)});\n"
    return out


# The runtime's parts, by concern, in the order they run: each is a function scope that
# adds to ``window.attnreport``; the page loads them as one file (one request, one script).
RUNTIME_PARTS = (
    "runtime_state.js",
    "runtime_layout.js",
    "runtime_fit.js",
    "runtime_data.js",
    "runtime_label.js",
    "runtime.js",
)


def runtime_js() -> str:
    """The page runtime, to be copied next to the pages as ``runtime.js``: the state and
    hash (``runtime_state.js``), column fitting and resizing (``runtime_layout.js``), plots
    shrunk to their column (``runtime_fit.js``), data files and columns
    (``runtime_data.js``), the charts' labels following their views (``runtime_label.js``),
    then drawing (``runtime.js``), joined in that order."""
    folder = resources.files("attnreport.charts")
    return "\n".join(folder.joinpath(name).read_text(encoding="utf-8") for name in RUNTIME_PARTS)
