"""Static SVG and PNG of a figure's default view, drawn by vl-convert.

vl-convert runs Vega in an embedded V8; a spec with too much data makes V8 run out of
memory and that kills the whole Python process (it cannot be caught). So the static
spec's size is checked first, and a figure over the bound gets no image (None, with a
warning): the page still shows the interactive chart.

Bound: at most ``MAX_ROWS`` data rows (inline ``values`` and top-level ``datasets``
together) and at most ``MAX_BYTES`` of spec JSON. A 60-token scaling grid's default view
has 9 x 1830 = 16,470 rows (about 1.5 MB), well inside; a 200-token one is refused.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import vl_convert

from attnreport.charts.figure import Figure

log = logging.getLogger(__name__)

MAX_ROWS = 40_000
MAX_BYTES = 4_000_000
PNG_SCALE = 1.0
VL_VERSION = "6.4"  # the Vega-Lite version Altair 6 writes and vl-convert 1.9 ships


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


def static_size(spec: dict[str, Any]) -> tuple[int, int]:
    """(rows, bytes of compact JSON) of a static spec."""
    return _count_rows(spec), len(json.dumps(spec, separators=(",", ":")))


def within_bounds(spec: dict[str, Any]) -> bool:
    """Whether vl-convert may be given this spec (see the module docstring)."""
    rows, size = static_size(spec)
    return rows <= MAX_ROWS and size <= MAX_BYTES


def export_images(fig: Figure) -> tuple[str, bytes] | None:
    """(SVG text, PNG bytes) of the figure's default view, or None when refused or failing."""
    spec = fig.static_spec
    if spec is None:
        return None
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
        return None
    try:
        svg = vl_convert.vegalite_to_svg(spec, vl_version=VL_VERSION)
        png = vl_convert.vegalite_to_png(spec, vl_version=VL_VERSION, scale=PNG_SCALE)
    except Exception as error:  # vl-convert raises ValueError/RuntimeError on bad specs
        log.warning("figure %s: vl-convert failed: %s", fig.key, error)
        return None
    return svg, png
