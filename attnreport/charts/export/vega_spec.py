"""The Vega spec a page draws: each figure's Vega-Lite spec, compiled when the site is built.

Compiling Vega-Lite in the reader's browser was a fixed cost of every chart, every time
a page opened (about 0.4-0.5 s of a 9-12 chart page in headless Chromium). The site
build compiles each figure once instead, with vl-convert's Vega-Lite: the same version
as the Vega bundle the pages load (``images.VL_VERSION``), whose Vega runs the result.
The figure cache keeps the compiled payload, so an unchanged figure is not compiled again.

The figure's rows are not part of the compiled spec. Vega-Lite compiles the named data
source ``KEY`` (the figure's key) into a Vega data set of the same name; it is compiled
here with no rows, and the page runtime gives it the default view's rows before the first
render, then inserts chunk rows into it (``embed`` documents the protocol).
"""

from __future__ import annotations

import vl_convert

from attnreport.charts.export.images import VL_VERSION
from attnreport.jsontypes import VegaSpec

MULTI_VIEW = ("facet", "hconcat", "vconcat", "concat", "repeat")


def fitted(spec: VegaSpec) -> VegaSpec:
    """A single view of a fixed pixel width (a line chart, a scatter) as the page draws it:
    as wide as its column (``width: "container"``, autosize ``fit-x`` with the padding
    inside), so its text keeps its size on a phone. A step-sized view (a heatmap: one cell
    per token) and a composed one keep their own size; the page scales them down to fit.
    The static images are drawn from the figure's own spec, not this one."""
    width = spec.get("width")
    if any(k in spec for k in MULTI_VIEW) or not isinstance(width, int | float):
        return spec
    return {**spec, "width": "container", "autosize": {"type": "fit-x", "contains": "padding"}}


def page_vega(spec: VegaSpec, key: str) -> VegaSpec:
    """The Vega spec compiled from the Vega-Lite ``spec`` of figure ``key`` (``fitted`` to
    its column), whose data set ``key`` has no rows yet. ValueError when vl-convert cannot
    compile it, or the compiled spec has no data set ``key`` for the runtime to fill."""
    spec = fitted(spec)
    empty = {**spec, "datasets": {**spec.get("datasets", {}), key: []}}
    try:
        vega = vl_convert.vegalite_to_vega(empty, vl_version=VL_VERSION)
    except Exception as error:  # vl-convert raises ValueError/RuntimeError on bad specs
        raise ValueError(f"figure {key}: Vega-Lite does not compile: {error}") from error
    if not any(data.get("name") == key for data in vega.get("data", [])):
        raise ValueError(f"figure {key}: the compiled Vega spec has no data set {key!r}")
    return vega
