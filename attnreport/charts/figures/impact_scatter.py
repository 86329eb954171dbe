"""Figure 9: orientation against magnitude, one point per (token, head) of the chosen
layer, coloured by the head's top target for that token; chunked per layer, from the same
rows as Figures 7-8 (``impact``)."""

from __future__ import annotations

import altair as alt

from attnreport.charts.figure import Figure
from attnreport.charts.figures.columns import sentence_tokens
from attnreport.charts.figures.impact import MEASURES, TARGET_LABEL, head_impact_rows
from attnreport.charts.spec import common, widgets
from attnreport.charts.spec.assemble import build_figure
from attnreport.charts.spec.common import tip
from attnreport.charts.spec.other_blocks import attention_layers
from attnreport.charts.spec.theme import kind_scale
from attnreport.results import SentenceResults
from attnreport.results.pooling import pooled_caption


def scatter_chart(
    key: str, tokens: list[str], n_layers: int, layer: int, layers: list[int] | None = None
) -> alt.Chart:
    """Fig 9: orientation against magnitude, one point per (token, head); ``layers``: as
    in ``impact.histogram_chart``."""
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
