"""Figures 7-9: what each head of a chosen layer changes in the hidden state.

- Fig 7/8: histograms of ``magnitude = ||u||/||x||`` and ``orientation = cos(u, x)`` per
  head of a chosen layer, stacked by the head's top target for that token (self / first
  token / other), so the reader sees whether first-token heads write small updates.
- Fig 9: orientation against magnitude, one point per (token, head) of the chosen layer.
All three are chunked per layer (heads x tokens rows each). Fig 10 and the pooled index
figure are in ``block_impact``.
"""

from __future__ import annotations

import altair as alt

from attnreport.charts.figure import Columns, Figure
from attnreport.charts.figures.columns import as_list, rounded, select, sentence_tokens, sort_rows
from attnreport.charts.spec import common, widgets
from attnreport.charts.spec.assemble import build_figure
from attnreport.charts.spec.common import tip
from attnreport.charts.spec.other_blocks import attention_layers
from attnreport.charts.spec.theme import (
    KIND_DOMAIN,
    kind_scale,
)
from attnreport.results import SentenceResults
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


def histogram_chart(
    key: str, measure: str, n_layers: int, n_heads: int, layer: int, layers: list[int] | None = None
) -> alt.FacetChart:
    """Fig 7/8: one small histogram per head, bars stacked by top-target kind; ``layers``:
    the attention layers the slider offers (``widgets.layer_param``)."""
    name, axis_title, _ = MEASURES[measure]
    binning = alt.Bin(maxbins=24) if measure == "magnitude" else alt.Bin(extent=[-1, 1], step=0.1)
    panel = (
        alt.Chart()
        .mark_bar()
        .encode(
            x=alt.X(f"{measure}:Q", bin=binning, title=axis_title),
            y=alt.Y("count():Q", title="tokens"),
            color=alt.Color("top_target:N", scale=kind_scale(), title="head's top target"),
            tooltip=[
                # binned like x: an unbinned field would split every bar into single tokens
                alt.Tooltip(f"{measure}:Q", bin=binning, title=name.lower(), format=".2f"),
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
    return (
        panel.facet(
            facet=alt.Facet("head:O", title="head"), columns=columns, data=alt.Data(name=key)
        )
        .transform_filter("datum.layer == layer")
        .transform_calculate(top_target=TARGET_LABEL)
        .add_params(widgets.layer_param(n_layers, layer, layers))
        .properties(title=title)
    )


def scatter_chart(
    key: str, tokens: list[str], n_layers: int, layer: int, layers: list[int] | None = None
) -> alt.Chart:
    """Fig 9: orientation against magnitude, one point per (token, head); ``layers``: as
    in ``histogram_chart``."""
    title = common.selection_title(
        "Orientation vs magnitude", "one point per token and head", "layer"
    )
    return (
        alt.Chart(alt.Data(name=key))
        .transform_filter("datum.layer == layer")
        .transform_calculate(top_target=TARGET_LABEL, token="tokens[datum.query]")
        .mark_point(filled=True, size=28, opacity=0.7)
        .encode(
            x=alt.X("magnitude:Q", title=MEASURES["magnitude"][2]),
            y=alt.Y(
                "orientation:Q", title=MEASURES["orientation"][2], scale=alt.Scale(domain=[-1, 1])
            ),
            color=alt.Color("top_target:N", scale=kind_scale(), title="head's top target"),
            tooltip=[
                tip("token:N", "token"),
                tip("query:O", "position"),
                tip("layer:O", "layer"),
                tip("head:O", "head"),
                tip("magnitude:Q", "magnitude", ".3f"),
                tip("orientation:Q", "orientation", ".3f"),
                tip("top_target:N", "head's top target"),
            ],
        )
        .add_params(widgets.tokens_param(tokens), widgets.layer_param(n_layers, layer, layers))
        .properties(title=title, width=520, height=320)
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


def histogram_figure(
    sentence: SentenceResults, measure: str, source: str = "orientation-vs-magnitude"
) -> Figure:
    """Fig 7 (``magnitude``) or Fig 8 (``orientation``), chunked per layer; other layers
    come from the chunk files of Fig 9 (key ``source``, on the same page)."""
    n_layers, n_heads = common.n_layers_heads(sentence)
    layer = common.default_head(sentence)[0]
    key = "update-" + measure
    chart = histogram_chart(key, measure, n_layers, n_heads, layer, attention_layers(sentence))
    return build_figure(
        key=key,
        title=MEASURES[measure][0],
        caption=HISTOGRAM_CAPTIONS[measure]
        + pooled_caption(sentence.tables.head_impact, "each count"),
        chart=chart,
        chunks=head_impact_rows(sentence, (measure,)),
        params=("layer",),
        default=(layer,),
        chunk_source=source,
    )


def scatter_figure(sentence: SentenceResults) -> Figure:
    """Fig 9, chunked per layer."""
    n_layers, _ = common.n_layers_heads(sentence)
    layer = common.default_head(sentence)[0]
    key = "orientation-vs-magnitude"
    tokens = sentence_tokens(sentence)
    chart = scatter_chart(key, tokens, n_layers, layer, attention_layers(sentence))
    caption = (
        "Each point is one token and one head of the chosen layer: how strongly the head "
        "changes that token's hidden state (x) against the direction of the change (y). "
        "Points near y = 0 are orthogonal updates; points below 0 cancel part of the hidden "
        "state. Purple points are tokens the head attends to the first token for; token 0, "
        "which can attend only to itself, is pale grey."
    ) + pooled_caption(sentence.tables.head_impact, "each point")
    rows = head_impact_rows(sentence, ("query", "magnitude", "orientation"))
    return build_figure(
        key=key,
        title="Orientation vs magnitude",
        caption=caption,
        chart=chart,
        chunks=rows,
        params=("layer",),
        default=(layer,),
    )
