"""Static PNGs are drawn at twice the SVG's size (print and high-density screens): a
752-pixel figure gives a 1504-pixel PNG."""

from __future__ import annotations

import re
import struct

from attnreport.charts.export import images
from attnreport.charts.export.png import png_chunks

SPEC = {
    "$schema": "https://vega.github.io/schema/vega-lite/v5.json",
    "data": {"values": [{"a": 1, "b": "x"}, {"a": 3, "b": "y"}]},
    "mark": "bar",
    "encoding": {
        "x": {"field": "a", "type": "quantitative"},
        "y": {"field": "b", "type": "nominal"},
    },
    "width": 300,
    "height": 80,
}


def test_png_is_twice_the_svg():
    svg, png = images.render_static(SPEC, png=True)
    root = re.search(rb"<svg[^>]*>", svg).group(0)
    width = float(re.search(rb'\swidth="([\d.]+)"', root).group(1))
    height = float(re.search(rb'\sheight="([\d.]+)"', root).group(1))
    header = dict(png_chunks(png))[b"IHDR"]
    png_width, png_height = struct.unpack(">II", header[:8])
    assert images.PNG_SCALE == 2.0
    assert (png_width, png_height) == (round(2 * width), round(2 * height))
    assert "png scale 2.0" in images.exporter_version()  # part of every image cache key


def _size(png: bytes) -> tuple[int, int]:
    return struct.unpack(">II", dict(png_chunks(png))[b"IHDR"][:8])


def _svg_size(svg: bytes) -> tuple[float, float]:
    root = re.search(rb"<svg[^>]*>", svg).group(0)
    width = float(re.search(rb'\swidth="([\d.]+)"', root).group(1))
    return width, float(re.search(rb'\sheight="([\d.]+)"', root).group(1))


def test_another_scale_is_drawn_at_that_scale():
    svg, png = images.render_static(SPEC, png=3.0)
    width, height = _svg_size(svg)
    assert _size(png) == (round(3 * width), round(3 * height))


def test_png_scale_setting_reaches_the_site_and_is_kept(tmp_path):
    import json

    from click.testing import CliRunner

    from attnreport.cli import main
    from attnreport.output import write_site
    from attnreport.publish import options_from_json
    from attnreport.results import dump
    from tests.fixtures.fake_results import fake_study, typed

    results = write_site(dump(typed(fake_study(1, n_layers=2, n_heads=2))), tmp_path / "r")
    args = ["render", str(results), "--out", str(tmp_path / "s"), "--png", "--png-scale", "1.5"]
    done = CliRunner().invoke(main, args)
    assert done.exit_code == 0, done.output
    site = tmp_path / "s"
    pngs = sorted(site.glob("figures/**/*.png"))
    assert pngs
    for png in pngs[:3]:
        width, height = _svg_size(png.with_suffix(".svg").read_bytes())
        drawn = _size(png.read_bytes())  # whole pixels: within one of the exact size
        assert abs(drawn[0] - 1.5 * width) <= 1 and abs(drawn[1] - 1.5 * height) <= 1, png
    assert json.loads((site / "results" / "render.json").read_text())["png_scale"] == 1.5
    legacy = options_from_json(b'{"images": true, "png": true}', "render.json")
    assert legacy.png_scale == 1.0  # sites drawn when every PNG was 1x render as they were
    assert options_from_json(b'{"png": false}', "render.json").png_scale == 2.0
