"""A chart of per-layer medians over the sentences: one coloured line per series, a band
for each median's 95% interval, an optional reference line (no effect), the layers a
claim's scope leaves out shaded. The evidence figures beside the claims draw it.

Rows (``series_rows``): ``layer``, ``series``, ``value`` (the median over sentences),
``low``, ``high`` (its 95% sign-test interval, or the range with fewer than
``verdicts.min_sentences()`` sentences) and ``n`` (the sentences behind it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import altair as alt
import numpy as np

from attnreport.charts.figure import Columns, Figure
from attnreport.charts.spec.assemble import build_figure
from attnreport.charts.spec.common import layer_x, tip
from attnreport.charts.spec.other_blocks import axis_layers
from attnreport.results import Manifest
from attnreport.site.words.verdicts import median_interval, min_sentences

INTERVAL_WORDS = (
    "the 95% interval of that median across sentences (with fewer than "
    f"{min_sentences()} sentences, their range)"
)
BAND_WORDS = f"the band is {INTERVAL_WORDS}"  # lines through the layers (connect=True)
BAR_WORDS = f"each bar is {INTERVAL_WORDS}"  # a point and a bar per layer (connect=False)


def series_rows(per_layer: Mapping[str, Mapping[int, Sequence[float]]]) -> Columns:
    """Rows from ``{series: {layer: per-sentence values}}`` (layers with no value left out)."""
    rows: Columns = {k: [] for k in ("layer", "series", "value", "low", "high", "n")}
    for series, layers in per_layer.items():
        for layer in sorted(layers):
            values = [float(v) for v in layers[layer] if np.isfinite(v)]
            if not values:
                continue
            low, high = median_interval(values) or (min(values), max(values))
            for name, value in zip(rows, (int(layer), series, float(np.median(values)),
                                          low, high, len(values)), strict=True):  # fmt: skip
                rows[name].append(value)
    return rows


def layer_series_chart(
    key: str,
    n_layers: int,
    *,
    title: str,
    y_title: str,
    series_title: str,
    log: bool = False,
    reference: tuple[float, str] | None = None,
    outside: tuple[float, float] | None = None,
    connect: bool = True,
) -> alt.LayerChart:
    """The chart of ``series_rows``; ``reference``: (value, what it means) drawn as a
    dashed line; ``outside``: (from, to) a layer span shaded as outside the claim's scope;
    ``connect``: lines through a series' layers (False: a point and an interval bar per
    layer, for series that split the layers between them)."""
    scale = alt.Scale(type="log") if log else alt.Scale(zero=True)
    base = alt.Chart().encode(
        x=layer_x(n_layers),
        color=alt.Color(
            "series:N",
            legend=alt.Legend(
                title=series_title, orient="bottom", labelLimit=420, columnPadding=18
            ),
        ),
    )
    interval = base.mark_area(opacity=0.18) if connect else base.mark_rule(strokeWidth=1.5)
    band = interval.encode(y=alt.Y("low:Q", scale=scale), y2="high:Q")
    marker = (
        base.mark_line(point=alt.OverlayMarkDef(size=26), strokeWidth=1.8)
        if connect
        else base.mark_point(filled=True, size=40)
    )
    lines = marker.encode(
        y=alt.Y("value:Q", title=y_title, scale=scale),
        tooltip=[
            tip("layer:Q", "layer"),
            tip("series:N", series_title),
            tip("value:Q", "median over sentences", ".3g"),
            tip("low:Q", "95% interval from", ".3g"),
            tip("high:Q", "to", ".3g"),
            tip("n:Q", "sentences"),
        ],
    )
    marks: list[alt.Chart] = []
    if outside is not None:
        span = alt.Data(
            values=[{"from": outside[0], "to": outside[1], "scope": "outside the claim's scope"}]
        )
        marks.append(
            alt.Chart(span)
            .mark_rect(color="#9aa7b8", opacity=0.16)
            .encode(x=alt.X("from:Q"), x2="to:Q", tooltip=[tip("scope:N", "layers")])
        )
    marks += [band, lines]
    if reference is not None:
        line = alt.Data(values=[{"y": reference[0], "meaning": reference[1]}])
        marks.append(
            alt.Chart(line)
            .mark_rule(strokeDash=[5, 4], color="#555")
            .encode(y=alt.Y("y:Q", scale=scale), tooltip=[tip("meaning:N", "reference")])
        )
    chart = alt.layer(*marks, data=alt.Data(name=key))
    return chart.properties(title=alt.TitleParams(text=title), width=520, height=240)


def layer_series_figure(
    key: str, heading: str, caption: str, rows: Columns, manifest: Manifest, **chart: Any
) -> Figure:
    """The figure ``heading`` of ``rows`` (``series_rows``), drawn by ``layer_series_chart``
    with the ``chart`` options (the chart's own title among them) on the model's layer
    axis."""
    n_layers = axis_layers(manifest, max(rows["layer"], default=0) + 1)
    drawn = layer_series_chart(key, n_layers, **chart)
    return build_figure(key=key, title=heading, caption=caption, chart=drawn, rows=rows)
