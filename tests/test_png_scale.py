"""Static PNGs are drawn at twice the SVG's size (print and high-density screens): a
752-pixel figure gives a 1504-pixel PNG."""

from __future__ import annotations

import re
import struct

from attnreport.charts import images

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
    header = dict(images.png_chunks(png))[b"IHDR"]
    png_width, png_height = struct.unpack(">II", header[:8])
    assert images.PNG_SCALE == 2.0
    assert (png_width, png_height) == (round(2 * width), round(2 * height))
    assert "png scale 2.0" in images.exporter_version()  # part of every image cache key
