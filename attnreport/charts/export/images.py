"""Static SVG and PNG of a figure's default view, drawn by vl-convert.

vl-convert runs Vega in an embedded V8; a spec with too much data makes V8 run out of
memory and that kills the whole Python process (it cannot be caught). So the static
spec's size is checked first, and a figure over the bound gets no image (None, with a
warning): the page still shows the interactive chart.

Bound: at most ``MAX_ROWS`` data rows (inline ``values`` and top-level ``datasets``
together) and at most ``MAX_BYTES`` of spec JSON. A 60-token scaling grid's default view
has 9 x 1830 = 16,470 rows (about 1.5 MB), well inside; a 200-token one is refused.

PNG size: vl-convert compresses quickly rather than well (every row Sub-filtered, weak
deflate). ``optimize_png`` re-encodes the same pixels losslessly: RGB when every pixel is
opaque, a palette when there are at most 256 colours, unfiltered scanlines (charts' flat
colour runs deflate best so), zlib level 9. The
example site's PNGs shrink to about 40% of their size.

``render_static`` is the exporter proper (same spec, same bytes, in any process);
``image_export.figure_images`` calls it for many figures, through the image cache and in
parallel. ``exporter_version`` names everything besides the spec that the bytes depend
on: bump ``POSTPROCESS_VERSION`` when ``optimize_png`` or ``stable_svg_ids`` changes.
"""

from __future__ import annotations

import importlib.metadata
import json
import logging
import struct
import zlib
from typing import Any

import numpy as np
import vl_convert

from attnreport.charts.export import fonts
from attnreport.charts.export.svg import compact_svg, stable_svg_ids
from attnreport.charts.figure import Figure
from attnreport.jsontypes import VegaSpec

log = logging.getLogger(__name__)

MAX_ROWS = 40_000
MAX_BYTES = 4_000_000
PNG_SCALE = 2.0  # PNGs at twice the SVG size: sharp in print and on high-density screens
VL_VERSION = "6.4"  # the Vega-Lite version Altair 6 writes and vl-convert 1.9 ships
# Bump whenever stable_svg_ids, compact_svg or optimize_png changes the bytes they write:
# cached images made by the old code are then no longer used.
POSTPROCESS_VERSION = 2


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


PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_CHANNELS = {0: 1, 2: 3, 4: 2, 6: 4}  # colour type -> samples per pixel (8-bit images)


def png_chunks(png: bytes) -> list[tuple[bytes, bytes]]:
    """(type, data) of every chunk of a PNG file, in order."""
    if not png.startswith(PNG_SIGNATURE):
        raise ValueError("not a PNG file")
    chunks, at = [], len(PNG_SIGNATURE)
    while at < len(png):
        (length,) = struct.unpack(">I", png[at : at + 4])
        chunks.append((png[at + 4 : at + 8], png[at + 8 : at + 8 + length]))
        at += 12 + length
    return chunks


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def _unfilter(raw: bytes, height: int, row_bytes: int, bpp: int) -> np.ndarray | None:
    """Scanlines of filter None, Sub or Up undone (the ones vl-convert writes); None if
    another filter occurs."""
    rows = np.frombuffer(raw, dtype=np.uint8).reshape(height, row_bytes + 1)
    out = np.empty((height, row_bytes), dtype=np.uint8)
    previous = np.zeros(row_bytes, dtype=np.uint8)
    for r in range(height):
        kind, line = rows[r, 0], rows[r, 1:]
        if kind == 0:
            out[r] = line
        elif kind == 1:
            out[r] = np.cumsum(line.reshape(-1, bpp), axis=0, dtype=np.uint8).reshape(-1)
        elif kind == 2:
            out[r] = line + previous
        else:
            return None
        previous = out[r]
    return out


def _unfiltered(pixels: np.ndarray) -> bytes:
    """Scanlines with filter byte 0 (None) each. On the charts drawn here (flat colour
    runs, palette or full colour) None deflated smaller than per-row adaptive filtering on
    every image of the example, and one deflate at level 9 is most of the time spent."""
    height = pixels.shape[0]
    return np.hstack([np.zeros((height, 1), np.uint8), pixels]).tobytes()


def _reencoded(pixels: np.ndarray, channels: int) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    """(colour type, PLTE/tRNS chunks, IDAT data) of 8-bit RGBA pixels (height, width, 4)."""
    height, width = pixels.shape[:2]
    if channels == 4 and (pixels[..., 3] == 255).all():
        pixels, channels = pixels[..., :3], 3
    flat = np.ascontiguousarray(pixels).reshape(-1, channels)
    packed = np.zeros(len(flat), dtype=np.uint32)
    for c in range(channels):
        packed = (packed << 8) | flat[:, c]
    colours, index = np.unique(packed, return_inverse=True)
    extra: list[tuple[bytes, bytes]] = []
    if len(colours) <= 256:
        table = np.stack([(colours >> (8 * (channels - 1 - c))) & 255 for c in range(channels)], 1)
        extra.append((b"PLTE", table[:, :3].astype(np.uint8).tobytes()))
        if channels == 4:
            extra.append((b"tRNS", table[:, 3].astype(np.uint8).tobytes()))
        image, colour_type = index.astype(np.uint8).reshape(height, width), 3
    else:
        image = flat.reshape(height, width * channels)
        colour_type = 6 if channels == 4 else 2
    idat = zlib.compress(_unfiltered(image), 9)
    return colour_type, extra, idat


def optimize_png(png: bytes) -> bytes:
    """The same image in fewer bytes (see the module docstring); ``png`` itself when that
    is not smaller or the file is of a kind not handled (only 8-bit, non-interlaced)."""
    chunks = png_chunks(png)
    kinds = [kind for kind, _ in chunks]
    if kinds[0] != b"IHDR" or b"PLTE" in kinds:
        return png
    width, height, depth, colour_type, _, _, interlace = struct.unpack(">IIBBBBB", chunks[0][1])
    channels = _CHANNELS.get(colour_type)
    if depth != 8 or interlace or channels not in (3, 4):
        return png
    raw = zlib.decompress(b"".join(data for kind, data in chunks if kind == b"IDAT"))
    pixels = _unfilter(raw, height, width * channels, channels)
    ancillary = [(k, d) for k, d in chunks[1:] if k not in (b"IDAT", b"IEND")]
    if pixels is None:  # keep the filters, deflate them better
        palette, idat = [], zlib.compress(raw, 9)
    else:
        rgba = pixels.reshape(height, width, channels)
        colour_type, palette, idat = _reencoded(rgba, channels)
    header = struct.pack(">IIBBBBB", width, height, 8, colour_type, 0, 0, 0)
    parts = [(b"IHDR", header), *ancillary, *palette, (b"IDAT", idat), (b"IEND", b"")]
    out = PNG_SIGNATURE + b"".join(_chunk(kind, data) for kind, data in parts)
    return out if len(out) < len(png) else png


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
    (``stable_svg_ids``) and inert bytes dropped (``compact_svg``), PNG re-encoded (``optimize_png``); the PNG is ``b""`` when
    ``png`` is False, else drawn at ``PNG_SCALE`` (``png`` True) or at the scale ``png``
    gives (PNG pixels per SVG pixel). Raises what vl-convert raises.

    The same spec gives the same bytes in any process and on any machine with the same
    vl-convert (text is measured with its own fonts: ``fonts``), which is what lets the
    image cache and the parallel export stand in for a serial export.
    """
    fonts.use_bundled_fonts()
    drawn = vl_convert.vegalite_to_svg(spec, vl_version=VL_VERSION).encode("utf-8")
    svg = compact_svg(stable_svg_ids(drawn))
    if not png:
        return svg, b""
    # Rasterise the SVG rather than running Vega a second time for the PNG.
    scale = PNG_SCALE if png is True else float(png)
    raster = vl_convert.svg_to_png(svg.decode("utf-8"), scale=scale)
    return svg, optimize_png(raster)


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
