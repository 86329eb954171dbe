"""Heat-map cells of a static SVG drawn as one embedded PNG (``charts.export.cells``).

The image is checked twice, independently: its pixels decoded by the reference PNG
decoder of ``test_charts`` against the colours the cells were given, and the two files
(cells as shapes, cells as one image) drawn by resvg (``vl_convert.svg_to_png``) at the
page's PNG scale, pixel against pixel: the same, but for pixels a cell edge passes
through, which resvg anti-aliases when the edge falls between two pixels.
"""

from __future__ import annotations

import base64
import re
import struct
import zlib

import numpy as np
import pytest
import vl_convert

from attnreport.charts.export import fonts
from attnreport.charts.export.cells import MIN_CELLS, rasterise_cells
from attnreport.charts.export.images import PNG_SCALE, render_static
from attnreport.charts.export.png import _unfilter, png_chunks
from attnreport.charts.export.svg import compact_svg, stable_svg_ids
from tests.test_charts import decode_png

HEAD = (
    b'<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" '
    b'width="120" height="120" viewBox="0 0 120 120"><rect width="120" height="120" '
    b'fill="white"/><g transform="translate(5,7)">'
)
TAIL = b"</g></svg>"


def cell(x: float, y: float, w: float, h: float, fill: str, opacity: str = "") -> bytes:
    extra = f' fill-opacity="{opacity}"' if opacity else ""
    return f'<path d="M{x:g},{y:g}h{w:g}v{h:g}h-{w:g}Z" fill="{fill}"{extra}/>'.encode()


def group(items: list[bytes], name: str = "layer_0_marks") -> bytes:
    return (
        (
            f'<g class="mark-rect role-mark {name}" role="graphics-symbol" '
            'aria-roledescription="rect mark container">'
        ).encode()
        + b"".join(items)
        + b"</g>"
    )


def triangle(n: int, size: float) -> tuple[list[bytes], dict[tuple[int, int], tuple[int, ...]]]:
    """A causal triangle of n x n cells of ``size`` units, colours varying, one cell
    half transparent and one in hex; (its paths, (row, col) -> RGBA)."""
    items, colours = [], {}
    for r in range(n):
        for c in range(r + 1):
            rgba = (10 * r % 256, 7 * c % 256, (r * c) % 256, 255)
            fill, opacity = f"rgb({rgba[0]}, {rgba[1]}, {rgba[2]})", ""
            if (r, c) == (3, 1):
                fill, opacity, rgba = "#a0b1c2", "0.5", (0xA0, 0xB1, 0xC2, 128)
            items.append(cell(c * size, r * size, size, size, fill, opacity))
            colours[(r, c)] = rgba
    return items, colours


def images_of(svg: bytes) -> list[dict[str, str]]:
    return [
        dict(re.findall(rb'([\w:-]+)="([^"]*)"', m)) for m in re.findall(rb"<image [^>]*/>", svg)
    ]


def test_a_grid_becomes_one_image_with_each_cells_colour_at_each_pixel():
    items, colours = triangle(12, 4.5)  # 78 cells, 9 pixels each at scale 2
    svg = HEAD + group(items) + TAIL
    out = rasterise_cells(svg, scale=2.0)
    (image,) = images_of(out)
    assert b"<path" not in out and out.count(b"mark-rect role-mark layer_0_marks") == 1
    assert [image[k] for k in (b"x", b"y", b"width", b"height")] == [b"0", b"0", b"54", b"54"]
    png = base64.b64decode(image[b"xlink:href"].split(b",", 1)[1])
    pixels = decode_png(png)
    assert len(pixels) == 108 and len(pixels[0]) == 108  # 12 cells x 4.5 units x 2
    for (r, c), rgba in colours.items():
        for dy in range(9):
            for dx in range(9):
                assert pixels[9 * r + dy][9 * c + dx] == rgba, (r, c, dy, dx)
    for r in range(12):
        for c in range(r + 1, 12):  # above the diagonal: no cell, nothing drawn
            assert pixels[9 * r + 4][9 * c + 4][3] == 0
    assert rasterise_cells(out, scale=2.0) == out  # idempotent


@pytest.mark.parametrize(
    "why, items",
    [
        (
            "bars of different widths",
            [cell(0, 10 * i, 3 + i, 8, "#102030") for i in range(MIN_CELLS)],
        ),
        ("too few cells to pay off", triangle(10, 4)[0][: MIN_CELLS - 1]),
        ("two cells in one place", [*triangle(12, 4)[0], cell(0, 0, 4, 4, "#ffffff")]),
        ("off the lattice", [*triangle(12, 4)[0][:-1], cell(1, 44, 4, 4, "#ffffff")]),
        (
            "a stroked cell",
            [*triangle(12, 4)[0], b'<path d="M60,0h4v4h-4Z" fill="#fff" stroke="#000"/>'],
        ),
    ],
)
def test_a_group_that_is_no_plain_grid_is_left_as_it_is(why, items):
    svg = HEAD + group(items) + group([cell(0, 0, 5, 5, "#000000")], "layer_1_marks") + TAIL
    assert rasterise_cells(svg) == svg, why


def test_without_an_xlink_namespace_the_image_uses_href():
    svg = (
        HEAD.replace(b' xmlns:xlink="http://www.w3.org/1999/xlink"', b"")
        + group(triangle(12, 4)[0])
        + TAIL
    )
    (image,) = images_of(rasterise_cells(svg))
    assert b"href" in image and b"xlink:href" not in image


def drawn(svg: bytes) -> np.ndarray:
    """(height, width, channels) pixels of ``svg`` drawn by resvg at the page's PNG scale."""
    png = vl_convert.svg_to_png(svg.decode("utf-8"), scale=PNG_SCALE)
    chunks = png_chunks(png)
    header = dict(chunks)[b"IHDR"]
    width, height, _, colour = struct.unpack(">IIBB", header[:10])
    channels = {2: 3, 6: 4}[colour]
    raw = zlib.decompress(b"".join(data for kind, data in chunks if kind == b"IDAT"))
    rows = _unfilter(raw, height, width * channels, channels)  # the filters vl-convert writes
    assert rows is not None, "a scanline filter other than None, Sub or Up"
    return rows.reshape(height, width, channels)


@pytest.mark.parametrize("tokens", [20, 23])  # cells of 14 units, and of 12.17... units
def test_a_real_heat_map_draws_the_same_pixels_but_at_cell_edges(tokens):
    """A Vega-Lite heat map (the attention map's mark: rect cells coloured by a continuous
    scale, the causal triangle only, no ARIA labels) exported by vl-convert, with and without its cells
    made one image: the pixels resvg draws differ only where a cell edge falls between
    pixels (within one pixel of it), and the file is smaller."""
    fonts.use_bundled_fonts()
    values = [
        {"query": q, "key": k, "score": float(np.sin(q * 0.7 + k * 1.3) * (q - k))}
        for q in range(tokens)
        for k in range(q + 1)
    ]
    spec = {
        "$schema": "https://vega.github.io/schema/vega-lite/v6.json",
        "width": 280,
        "height": 280,
        "data": {"values": values},
        "mark": {"type": "rect"},
        "config": {"aria": False},  # as every static spec of the report (spec.assemble)
        "encoding": {
            "x": {"field": "key", "type": "ordinal"},
            "y": {"field": "query", "type": "ordinal"},
            "color": {"field": "score", "type": "quantitative", "scale": {"scheme": "oranges"}},
        },
    }
    light, _ = render_static(spec, png=False)
    vector = compact_svg(
        stable_svg_ids(vl_convert.vegalite_to_svg(spec, vl_version="6.4").encode())
    )
    assert b"<image " in light and len(light) < len(vector) and b'<path d="M0,0h' in vector
    a, b = drawn(vector), drawn(light)
    assert a.shape == b.shape
    differ = np.abs(a.astype(int) - b.astype(int)).max(-1) > 0
    step = 280 / tokens * PNG_SCALE  # device pixels per cell
    (image,) = images_of(light)
    origin = [float(image[k]) * PNG_SCALE for k in (b"x", b"y")]
    offset = re.search(rb'<g[^>]*transform="translate\(([\d.]+),([\d.]+)\)"', vector)
    assert offset is not None
    edges = [
        origin[i] + float(offset.group(i + 1)) * PNG_SCALE + step * np.arange(tokens + 1)
        for i in (0, 1)
    ]
    rows, cols = np.nonzero(differ)
    near = lambda at, lines: np.abs(at[:, None] + 0.5 - lines[None, :]).min(1) <= 1.0  # noqa: E731
    assert np.all(near(cols, edges[0]) | near(rows, edges[1])), "a pixel differs inside a cell"
    if step.is_integer():
        assert not differ.any()
