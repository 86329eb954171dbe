"""A static SVG's heat-map cells as one embedded PNG per grid, in a tenth of the bytes.

Vega draws every cell of a heat map as a path of its own, ``<path d="M8,16h8v8h-8Z"
fill="rgb(245, 125, 47)"/>``: 45-80 bytes a cell, most of a sentence page's attention map
(2,485 cells), mean grids and scaling grids. ``rasterise_cells`` finds each rect mark
group whose items are all such cells on one lattice (same width and height, corners on
its steps, no two on one place, at least ``MIN_CELLS``) and puts in its place one
``<image>`` of the same area: a PNG with ``scale`` pixels per SVG unit (2: sharp on
high-density screens; the page's PNG export draws at 2 too), each pixel the colour of the
cell its centre falls in, transparent where the lattice has no cell, and drawn without
smoothing (``image-rendering="optimizeSpeed"``). Everything else (axes, labels, legends,
the dots over a map, groups of any other shape) is left byte for byte.

Rasterised at the same scale, the two files give the same pixels, but for anti-aliasing
along cell edges that fall between pixels (``tests/test_cells.py``). Pure and idempotent.
"""

from __future__ import annotations

import base64
import re

import numpy as np

from attnreport.charts.export.png import encode_png

MIN_CELLS = 64  # a smaller grid costs little as paths, and an image would not pay off
_GROUP = re.compile(rb'(<g class="mark-rect role-mark[^"]*"[^>]*>)([^<]*(?:<path [^>]*/>)+)(</g>)')
_NUMBER = rb"(-?\d+(?:\.\d+)?(?:e-?\d+)?)"
_CELL = re.compile(
    rb'<path d="M' + _NUMBER + rb"," + _NUMBER + rb"h" + _NUMBER + rb"v" + _NUMBER
    + rb'h-' + _NUMBER + rb'Z" fill="(?:rgb\((\d+), ?(\d+), ?(\d+)\)|#([0-9a-fA-F]{6}))"'
    + rb'(?: fill-opacity="(\d+(?:\.\d+)?)")?/>'
)  # fmt: skip
_XLINK = b'xmlns:xlink="http://www.w3.org/1999/xlink"'


def rasterise_cells(svg: bytes, scale: float = 2.0) -> bytes:
    """``svg`` with every heat-map grid drawn as one image (see the module docstring)."""
    href = b"xlink:href" if _XLINK in svg[: svg.find(b">") + 1] else b"href"
    return _GROUP.sub(lambda m: _as_image(m, scale, href), svg)


def _as_image(match: re.Match[bytes], scale: float, href: bytes) -> bytes:
    opening, body, closing = match.groups()
    cells = _cells(body)
    grid = None if cells is None else _lattice(cells)
    if grid is None:
        return match.group(0)
    x0, y0, width, height, rgba = grid
    rows, cols = rgba.shape[:2]
    w_px, h_px = max(1, round(cols * width * scale)), max(1, round(rows * height * scale))
    at_row = ((np.arange(h_px) + 0.5) * rows / h_px).astype(np.int64)  # pixel centre -> cell
    at_col = ((np.arange(w_px) + 0.5) * cols / w_px).astype(np.int64)
    png = encode_png(rgba[at_row][:, at_col])
    image = (
        (
            f'<image x="{_num(x0)}" y="{_num(y0)}" width="{_num(cols * width)}" '
            f'height="{_num(rows * height)}" preserveAspectRatio="none" '
            f'image-rendering="optimizeSpeed" '
        ).encode()
        + href
        + b'="data:image/png;base64,'
        + base64.b64encode(png)
        + b'"/>'
    )
    return opening + image + closing


def _cells(body: bytes) -> list[tuple[float, float, float, float, tuple[int, ...]]] | None:
    """(x, y, width, height, rgba) of every path of a group, or None unless every item is
    a plain filled rectangle."""
    out, at = [], 0
    for m in _CELL.finditer(body):
        if m.start() != at:
            return None
        x, y, w, h, back = (float(v) for v in m.group(1, 2, 3, 4, 5))
        if back != w or w <= 0 or h <= 0:
            return None
        if m.group(9) is not None:
            rgb = tuple(int(m.group(9)[i : i + 2], 16) for i in (0, 2, 4))
        else:
            rgb = tuple(int(v) for v in m.group(6, 7, 8))
        opacity = 1.0 if m.group(10) is None else float(m.group(10))
        if max(rgb) > 255 or opacity > 1:
            return None
        out.append((x, y, w, h, (*rgb, round(opacity * 255))))
        at = m.end()
    return out if at == len(body) and len(out) >= MIN_CELLS else None


def _lattice(cells: list) -> tuple[float, float, float, float, np.ndarray] | None:
    """(x0, y0, cell width, cell height, (row, col, 4) uint8 colours, alpha 0 where no
    cell) when the cells tile one lattice without overlap; else None."""
    xs, ys, ws, hs = (np.array([c[i] for c in cells]) for i in range(4))
    width, height = ws[0], hs[0]
    if not (
        np.allclose(ws, width, rtol=1e-9, atol=0) and np.allclose(hs, height, rtol=1e-9, atol=0)
    ):
        return None
    x0, y0 = xs.min(), ys.min()
    cols_f, rows_f = (xs - x0) / width, (ys - y0) / height
    cols, rows = np.rint(cols_f).astype(np.int64), np.rint(rows_f).astype(np.int64)
    if np.abs(cols_f - cols).max() > 1e-6 or np.abs(rows_f - rows).max() > 1e-6:
        return None
    rgba = np.zeros((rows.max() + 1, cols.max() + 1, 4), dtype=np.uint8)
    taken = np.zeros(rgba.shape[:2], dtype=bool)
    for r, c, cell in zip(rows.tolist(), cols.tolist(), cells, strict=True):
        if taken[r, c]:
            return None
        taken[r, c] = True
        rgba[r, c] = cell[4]
    return float(x0), float(y0), float(width), float(height), rgba


def _num(value: float) -> str:
    """A coordinate as Vega writes one: integers bare, else up to 12 significant digits."""
    return str(int(value)) if float(value).is_integer() else f"{value:.12g}"
