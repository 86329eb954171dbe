"""Figures 7-8: what each head of a chosen layer changes in the hidden state.

- Fig 7/8: the distribution of ``magnitude = ||u||/||x||`` and ``orientation = cos(u, x)``
  per head of a chosen layer, coloured by the head's top target for that token (self /
  first token / other), so the reader sees whether first-token heads write small updates.
  Fewer than ``scales.STRIP_BELOW`` tokens a head: a strip, one row per head and a point
  per token (a histogram would hold 1-5 tokens a bin); the orientation's strip shades
  |cos| < 3/sqrt(d), the spread of the cosine between random directions in the d
  dimensions of the hidden state (``noise_band``). More: histograms, one per head, stacked
  by top target, each with its own axis (no axis under a head that does not exist). The
  magnitude's axis is logarithmic when its values span decades (``scales.ratio_scale``).
Both are chunked per layer (heads x tokens rows each). Fig 9 (orientation against
magnitude) is in ``impact_scatter``; Fig 10 and the pooled index figure in ``block_impact``.
"""

from __future__ import annotations

import altair as alt
import numpy as np

from attnreport.charts.figure import Columns, Figure
from attnreport.charts.figures.columns import as_list, rounded, select, sentence_tokens, sort_rows
from attnreport.charts.spec import common, scales, widgets
from attnreport.charts.spec.assemble import build_figure
from attnreport.charts.spec.common import tip
from attnreport.charts.spec.other_blocks import attention_layers
from attnreport.charts.spec.theme import (
    KIND_DOMAIN,
    kind_scale,
)
from attnreport.results import Manifest, SentenceResults
from attnreport.results.pooling import pooled_caption

# ``target`` column: 0 self, 1 first token, 2 other, 3 token 0 (KIND_DOMAIN order): token
# 0 can attend only to itself, so it is counted neither self nor first
ZERO_TARGET = 3
TARGET_LABEL = "[" + ", ".join(f"'{k}'" for k in KIND_DOMAIN) + "][datum.target]"
MEASURES = {  # name, short axis title (histogram panels), long axis title
    "magnitude": (
        "Update magnitude",
        "||u|| / ||x||",
        "||u|| / ||x|| (update norm / hidden-state norm)",
    ),
    "orientation": ("Update orientation", "cos(u, x)", "cos(u, x) (update vs hidden state)"),
}


def head_impact_rows(
    sentence: SentenceResults, fields: tuple[str, ...]
) -> dict[tuple[int], Columns]:
    """(layer,) -> rows layer, head, target (0/1/2) and ``fields`` of that layer."""
    impact = sort_rows(sentence.tables.head_impact.arrays(), ("layer", "head", "query"))
    top = sentence.tables.top.arrays()
    names = ("layer", "head", "query", "top_is_self", "top_is_first")
    cells = zip(*(top[name] for name in names), strict=True)
    kind = {  # a pooled row (``results.pooling``): most of its bin's queries
        (int(a), int(b), int(c)): ZERO_TARGET if c == 0 else 0 if is_self else 1 if is_first else 2
        for a, b, c, is_self, is_first in cells
    }
    out = {}
    for layer in sorted(set(impact["layer"].tolist())):
        rows = select(impact, impact["layer"] == layer)
        cols: Columns = {"layer": as_list(rows["layer"]), "head": as_list(rows["head"])}
        keys = zip(
            rows["layer"].tolist(), rows["head"].tolist(), rows["query"].tolist(), strict=True
        )
        cols["target"] = [kind.get(k, 2) for k in keys]
        for name in fields:
            cols[name] = as_list(rows[name]) if name == "query" else rounded(rows[name])
        out[(int(layer),)] = cols
    return out


def noise_band(manifest: Manifest | None) -> float | None:
    """3 / sqrt(d), d the hidden size: the cosine between two random directions in d
    dimensions has a spread of about 1/sqrt(d), so |cos(u, x)| below this is no
    direction at all (None when the manifest does not give d)."""
    d = manifest.model.hidden_size if manifest is not None else 0
    return round(3 / d**0.5, 4) if d > 0 else None


def per_head_count(sentence: SentenceResults) -> int:
    """The most values one head has in a layer of ``sentence`` (its tokens, or pooled rows)."""
    impact = sentence.tables.head_impact.arrays()
    if not len(impact["layer"]):
        return 0
    pairs = impact["layer"].astype(np.int64) * 1_000_003 + impact["head"].astype(np.int64)
    return int(np.unique(pairs, return_counts=True)[1].max())


def histogram_chart(
    key: str,
    measure: str,
    n_layers: int,
    n_heads: int,
    layer: int,
    layers: list[int] | None = None,
    values: list[float] | None = None,
) -> alt.FacetChart:
    """Fig 7/8: one small histogram per head, bars stacked by top-target kind; ``layers``:
    the attention layers the slider offers (``widgets.layer_param``); ``values``: every
    value of ``measure`` the figure draws, whose span chooses the bins' scale (the log of
    a magnitude that spans decades)."""
    name, axis_title, _ = MEASURES[measure]
    field, axis = measure, alt.Undefined
    logged = measure == "magnitude" and scales.scale_type(values or []) != "linear"
    if logged:  # bins of equal width in log10: the tick labels give the ratio itself
        field, axis_title = "log_" + measure, axis_title + " (log scale)"
        axis = alt.Axis(labelExpr="format(pow(10, datum.value), '.2~g')")
    binning = alt.Bin(maxbins=24) if measure == "magnitude" else alt.Bin(extent=[-1, 1], step=0.1)
    panel = (
        alt.Chart()
        .mark_bar()
        .encode(
            x=alt.X(f"{field}:Q", bin=binning, title=axis_title, axis=axis),
            y=alt.Y("count():Q", title="tokens"),
            color=alt.Color("top_target:N", scale=kind_scale(), title="head's top target"),
            tooltip=[
                # binned like x: an unbinned field would split every bar into single tokens
                alt.Tooltip(f"{field}:Q", bin=binning, title=name.lower(), format=".2f")
                if not logged
                else tip(f"{measure}:Q", "one of its values", ".3g"),
                tip("count():Q", "tokens"),
                tip("top_target:N", "head's top target"),
                tip("layer:O", "layer"),
                tip("head:O", "head"),
            ],
        )
        .properties(width=170, height=90)
    )
    title = common.selection_title(
        name, "one histogram per head; colour = the head's top target", "layer"
    )
    columns = min(n_heads, 4)
    chart = (
        panel.facet(
            facet=alt.Facet("head:O", title="head"), columns=columns, data=alt.Data(name=key)
        )
        .transform_filter("datum.layer == layer")
        .transform_calculate(top_target=TARGET_LABEL)
    )
    if logged:
        chart = chart.transform_calculate(**{field: f"log(datum.{measure}) / LN10"})
    return (
        chart.resolve_axis(x="independent")  # each head its own axis: none under no head
        .add_params(widgets.layer_param(n_layers, layer, layers))
        .properties(title=title)
    )


def strip_chart(
    key: str,
    measure: str,
    tokens: list[str],
    n_layers: int,
    layer: int,
    layers: list[int] | None = None,
    values: list[float] | None = None,
    band: float | None = None,
) -> alt.LayerChart:
    """Fig 7/8 for a few tokens a head: one row per head, a point per token coloured by
    top-target kind, on ``scales.ratio_scale`` of every value drawn (``values``); ``band``:
    the half-width of the noise band shaded around 0 (the orientation's ``noise_band``)."""
    name, _, axis_title = MEASURES[measure]
    scale = (
        alt.Scale(domain=[-1, 1]) if measure == "orientation" else scales.ratio_scale(values or [])
    )
    if measure == "magnitude" and scales.scale_type(values or []) != "linear":
        axis_title += f" ({scales.scale_type(values or [])} scale)"
    x = alt.X(f"{measure}:Q", title=axis_title, scale=scale)
    points = (
        alt.Chart()
        .mark_point(filled=True, size=36, opacity=0.75)
        .encode(
            x=x,
            y=alt.Y("head:O", title="head"),
            color=alt.Color("top_target:N", scale=kind_scale(), title="head's top target"),
            tooltip=[
                tip("token:N", "token"),
                tip("query:O", "position"),
                tip(f"{measure}:Q", name.lower(), ".3f"),
                tip("top_target:N", "head's top target"),
                tip("layer:O", "layer"),
                tip("head:O", "head"),
            ],
        )
    )
    subtitle = "one row per head, a point per token; colour = the head's top target"
    marks: list[alt.Chart] = [points]
    if band is not None:
        subtitle += f"; grey: |cos| < 3/\u221ad = {band:g}, no direction"
        noise = (
            alt.Chart()
            .transform_aggregate(rows="count()")
            .mark_rect(color="#000000", opacity=0.08)
            .encode(x=alt.datum(-band), x2=alt.datum(band))
        )
        marks.insert(0, noise)
    return (
        alt.layer(*marks, data=alt.Data(name=key))
        .transform_filter("datum.layer == layer")
        .transform_calculate(top_target=TARGET_LABEL, token="tokens[datum.query]")
        .add_params(widgets.tokens_param(tokens), widgets.layer_param(n_layers, layer, layers))
        .properties(
            title=common.selection_title(name, subtitle, "layer"),
            width=520,
            height=alt.Step(22),
        )
    )


HISTOGRAM_CAPTIONS = {
    "magnitude": (
        "How strongly each head of the chosen layer changes the hidden state: the norm of "
        "the head's update relative to the norm of the hidden state, one histogram per head "
        "over the sentence's tokens. Colour says where the head looked most for that token; "
        "compare the purple (first-token) part with the rest. Token 0, which can attend "
        "only to itself, is pale grey: counted neither self nor first."
    ),
    "orientation": (
        "The direction of each head's update: the cosine between the update and the hidden "
        "state, one histogram per head over the sentence's tokens. Near 0 the update is "
        "orthogonal to the hidden state; negative values cancel part of it."
    ),
}


STRIP_CAPTIONS = {
    "magnitude": (
        "How strongly each head of the chosen layer changes the hidden state: the norm of "
        "the head's update relative to the norm of the hidden state, one row per head and "
        "a point per token of the sentence (too few for a histogram). Colour says where the "
        "head looked most for that token; compare the purple (first-token) points with the rest."
    ),
    "orientation": (
        "The direction of each head's update: the cosine between the update and the hidden "
        "state, one row per head and a point per token of the sentence (too few for a "
        "histogram). The grey band is |cos| < 3/\u221ad = {band:g} (d = {d}, the hidden "
        "size): random directions in d dimensions have cosines of about \u00b11/\u221ad, "
        "so a point inside it is no direction at all. Right of it the update adds along the "
        "hidden state; left of it, it cancels part of it."
    ),
}


def histogram_figure(
    sentence: SentenceResults,
    measure: str,
    source: str = "orientation-vs-magnitude",
    manifest: Manifest | None = None,
) -> Figure:
    """Fig 7 (``magnitude``) or Fig 8 (``orientation``), chunked per layer (other layers
    come from the chunk files of Fig 9, key ``source``, on the same page): a strip of
    points per head for fewer than ``scales.STRIP_BELOW`` tokens a head, else histograms."""
    n_layers, n_heads = common.n_layers_heads(sentence)
    layer = common.default_head(sentence)[0]
    key = "update-" + measure
    values = as_list(sentence.tables.head_impact.arrays()[measure])
    layers = attention_layers(sentence)
    strip = per_head_count(sentence) < scales.STRIP_BELOW
    if strip:
        band = noise_band(manifest) if measure == "orientation" else None
        tokens = sentence_tokens(sentence)
        chart = strip_chart(key, measure, tokens, n_layers, layer, layers, values, band)
        d = manifest.model.hidden_size if manifest is not None else 0
        caption = STRIP_CAPTIONS[measure].format(band=band or 0, d=d)
        if band is None and measure == "orientation":
            caption = caption.split(" The grey band")[0] + "."
        fields: tuple[str, ...] = ("query", measure)
    else:
        chart = histogram_chart(key, measure, n_layers, n_heads, layer, layers, values)
        caption = HISTOGRAM_CAPTIONS[measure] + pooled_caption(
            sentence.tables.head_impact, "each count"
        )
        fields = (measure,)
    if measure == "magnitude":
        caption += scales.scale_words(values)
    return build_figure(
        key=key,
        title=MEASURES[measure][0],
        caption=caption,
        chart=chart,
        chunks=head_impact_rows(sentence, fields),
        params=("layer",),
        default=(layer,),
        chunk_source=source,
    )
