"""Static SVG and PNG of a figure's default view, drawn by vl-convert.

vl-convert runs Vega in an embedded V8; a spec with too much data makes V8 run out of
memory and that kills the whole Python process (it cannot be caught). So the static
spec's size is checked first, and a figure over the bound gets no image (None, with a
warning): the page still shows the interactive chart.

Bound: at most ``MAX_ROWS`` data rows (inline ``values`` and top-level ``datasets``
together) and at most ``MAX_BYTES`` of spec JSON. A 60-token scaling grid's default view
has 9 x 1830 = 16,470 rows (about 1.5 MB), well inside; a 200-token one is refused.

PNG size: vl-convert compresses quickly rather than well (every row Sub-filtered, weak
deflate). ``png.optimize_png`` re-encodes the same pixels losslessly: RGB when every pixel is
opaque, a palette when there are at most 256 colours, unfiltered scanlines (charts' flat
colour runs deflate best so), zlib level 9. The
example site's PNGs shrink to about 40% of their size.

SVG size: a heat map's cells become one embedded image (``cells.rasterise_cells``); the
PNG is drawn from the SVG before that, every cell a vector shape.

``render_static`` is the exporter proper (same spec, same bytes, in any process);
``image_export.figure_images`` calls it for many figures, through the image cache and in
parallel. ``exporter_version`` names everything besides the spec that the bytes depend
on: bump ``POSTPROCESS_VERSION`` when the post-processing changes the bytes it writes.
"""

from __future__ import annotations

import importlib.metadata
import json
import logging
from typing import Any

import vl_convert

from attnreport.charts.export import fonts
from attnreport.charts.export.cells import rasterise_cells
from attnreport.charts.export.png import optimize_png
from attnreport.charts.export.svg import compact_svg, stable_svg_ids
from attnreport.charts.figure import Figure
from attnreport.jsontypes import VegaSpec

log = logging.getLogger(__name__)

MAX_ROWS = 40_000
MAX_BYTES = 4_000_000
PNG_SCALE = 2.0  # PNGs at twice the SVG size: sharp in print and on high-density screens
VL_VERSION = "6.4"  # the Vega-Lite version Altair 6 writes and vl-convert 1.9 ships
# Bump whenever stable_svg_ids, compact_svg, rasterise_cells or optimize_png changes the
# bytes they write: cached images made by the old code are then no longer used.
POSTPROCESS_VERSION = 3


def _count_rows(spec: Any) -> int:
    """Rows of every inline dataset anywhere in the spec (``values`` lists and ``datasets``)."""
    if isinstance(spec, dict):
        rows = 0
        for name, value in spec.items():
            if name == "values" and isinstance(value, list):
                rows += len(value)
            elif name == "datasets" and isinstance(value, dict):
                rows += sum(len(v) for v in value.values() if isinstance(v, list))
            else:
                rows += _count_rows(value)
        return rows
    if isinstance(spec, list):
        return sum(_count_rows(v) for v in spec)
    return 0


def static_size(spec: VegaSpec) -> tuple[int, int]:
    """(rows, bytes of compact JSON) of a static spec."""
    return _count_rows(spec), len(json.dumps(spec, separators=(",", ":")))


def within_bounds(spec: VegaSpec) -> bool:
    """Whether vl-convert may be given this spec (see the module docstring)."""
    rows, size = static_size(spec)
    return rows <= MAX_ROWS and size <= MAX_BYTES


def exporter_version() -> str:
    """What the bytes of an exported image depend on besides its spec: vl-convert's
    version, the Vega-Lite version asked for, the fonts text is measured with
    (``fonts.FONTS``), the PNG scale and our post-processing (``POSTPROCESS_VERSION``).
    Part of every image cache key."""
    try:
        version = importlib.metadata.version("vl-convert-python")  # "1.9.0.post1"
    except importlib.metadata.PackageNotFoundError:
        version = vl_convert.__version__
    return (
        f"vl-convert {version}; vega-lite {VL_VERSION}; fonts {fonts.FONTS}; "
        f"png scale {PNG_SCALE}; post-processing {POSTPROCESS_VERSION}"
    )


def render_static(spec: VegaSpec, png: bool | float = True) -> tuple[bytes, bytes]:
    """(SVG, PNG) bytes of a static spec: vl-convert's drawing, SVG ids renumbered
    (``stable_svg_ids``), inert bytes dropped (``compact_svg``) and heat-map cells made one
    image (``rasterise_cells``), PNG re-encoded (``optimize_png``); the PNG is ``b""`` when
    ``png`` is False, else drawn at ``PNG_SCALE`` (``png`` True) or at the scale ``png``
    gives (PNG pixels per SVG pixel). Raises what vl-convert raises.

    The same spec gives the same bytes in any process and on any machine with the same
    vl-convert (text is measured with its own fonts: ``fonts``), which is what lets the
    image cache and the parallel export stand in for a serial export.
    """
    fonts.use_bundled_fonts()
    drawn = vl_convert.vegalite_to_svg(spec, vl_version=VL_VERSION).encode("utf-8")
    svg = compact_svg(stable_svg_ids(drawn))
    light = rasterise_cells(svg, PNG_SCALE)
    if not png:
        return light, b""
    # Rasterise the SVG rather than running Vega a second time for the PNG: the SVG whose
    # cells are still shapes, so a PNG at any scale draws them sharp.
    scale = PNG_SCALE if png is True else float(png)
    raster = vl_convert.svg_to_png(svg.decode("utf-8"), scale=scale)
    return light, optimize_png(raster)


def exportable(fig: Figure) -> bool:
    """Whether the figure has a static spec within bounds (a warning names any refused)."""
    spec = fig.static_spec
    if spec is None:
        return False
    rows, size = static_size(spec)
    if rows > MAX_ROWS or size > MAX_BYTES:
        log.warning(
            "figure %s: no static image, its default view has %d rows / %d bytes "
            "(bound %d rows / %d bytes)",
            fig.key,
            rows,
            size,
            MAX_ROWS,
            MAX_BYTES,
        )
        return False
    return True


def export_images(fig: Figure) -> tuple[str, bytes] | None:
    """(SVG text, PNG bytes) of the figure's default view, or None when refused or failing.

    One figure, no cache; ``attnreport.charts.export.image_export.figure_images`` exports many,
    cached and in parallel."""
    if not exportable(fig):
        return None
    try:
        svg, png = render_static(fig.static_spec)  # type: ignore[arg-type]
    except Exception as error:  # vl-convert raises ValueError/RuntimeError on bad specs
        log.warning("figure %s: vl-convert failed: %s", fig.key, error)
        return None
    return svg.decode("utf-8"), png
