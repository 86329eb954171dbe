"""Figure 1: the attention map of one head (pre-softmax scores, top target marked).

Input is one sentence's results (``sentences/NNN.json`` as loaded). The figure is
chunked per (layer, head): a 60-token head has 1830 cells.
"""

from __future__ import annotations

from typing import Any

import altair as alt

from attnreport.charts import common, widgets
from attnreport.charts.assemble import build_figure
from attnreport.charts.columns import (
    SCORE_DECIMALS,
    flatten,
    rounded,
    sentence_tokens,
    triangle_index,
)
from attnreport.charts.common import tip, token_axis, token_calcs
from attnreport.charts.figure import Columns, Figure
from attnreport.charts.theme import attention_scale, kind_expr, kind_scale

ROW_FILTER = "datum.layer == layer && datum.head == head"


def attention_map_rows(sentence: dict[str, Any]) -> dict[tuple[int, int], Columns]:
    """(layer, head) -> rows query, key, score, prob, rank (+ layer, head) of one head's triangle."""
    att = sentence["attention"]
    n = int(sentence["sentence"]["n_tokens"])
    query, key = triangle_index(n)
    out = {}
    for layer, heads in enumerate(att["scores"]):
        for head in range(len(heads)):
            count = len(query)
            out[(layer, head)] = {
                "layer": [layer] * count,
                "head": [head] * count,
                "query": query.tolist(),
                "key": key.tolist(),
                "score": rounded(flatten(att["scores"][layer][head]), SCORE_DECIMALS),
                "prob": rounded(flatten(att["probs"][layer][head])),
                "rank": flatten(att["ranks"][layer][head]).astype(int).tolist(),
            }
    return out


def _map_tooltips() -> list[alt.Tooltip]:
    return [
        tip("query_token:N", "current token"),
        tip("key_token:N", "target token"),
        tip("score:Q", "score s_ij", ".3f"),
        tip("prob:Q", "probability p_ij", ".4f"),
        tip("rank:O", "rank in row (0 = top)"),
        tip("query:O", "current position"),
        tip("key:O", "target position"),
        tip("layer:O", "layer"),
        tip("head:O", "head"),
    ]


def attention_map_chart(
    key: str, tokens: list[str], n_layers: int, n_heads: int, default: tuple[int, int]
) -> alt.LayerChart:
    """Fig 1: heatmap of s_ij (rows = current token, columns = target), top target marked."""
    n = len(tokens)
    step = common.cell_step(n)
    base = alt.Chart().encode(
        x=alt.X("key:O", **token_axis("target token (key)", n, angle=-60)),
        y=alt.Y("query:O", **token_axis("current token (query)", n)),
        tooltip=_map_tooltips(),
    )
    heat = base.mark_rect().encode(
        color=alt.Color("score:Q", scale=attention_scale(), legend=alt.Legend(title="score s_ij"))
    )
    top = (
        base.transform_filter("datum.rank == 0")
        .transform_calculate(top_target=kind_expr("datum.query", "datum.key"))
        .mark_point(
            filled=True,
            shape="circle",
            size=step * step * 0.4,
            stroke="white",
            strokeWidth=0.8,
            opacity=1,
        )
        .encode(
            color=alt.Color(
                "top_target:N", scale=kind_scale(), legend=alt.Legend(title="top target of the row")
            )
        )
    )
    title = common.selection_title("Attention map", "pre-softmax scores s_ij", "layer", "head")
    return (
        alt.layer(heat, top, data=alt.Data(name=key))
        .transform_filter(ROW_FILTER)
        .transform_calculate(**token_calcs(query_token="datum.query", key_token="datum.key"))
        .resolve_scale(color="independent")
        .add_params(
            widgets.tokens_param(tokens),
            widgets.layer_param(n_layers, default[0]),
            widgets.head_param(n_heads, default[1]),
        )
        .properties(title=title, width=alt.Step(step), height=alt.Step(step))
    )


def attention_map_figure(sentence: dict[str, Any], key: str = "attention-map") -> Figure:
    """Fig 1 as a Figure, chunked per (layer, head), opening on ``common.default_head``."""
    n_layers, n_heads = common.n_layers_heads(sentence)
    default = common.default_head(sentence)
    chart = attention_map_chart(key, sentence_tokens(sentence), n_layers, n_heads, default)
    caption = (
        "Each row is a current token and each column a target token it can attend to (only "
        "earlier tokens and itself); colour is the pre-softmax score s_ij of the chosen layer "
        "and head. The dot marks each row's highest-scoring target: green when a token attends "
        "most to itself, purple when it attends most to the first token. Look for columns of "
        "purple dots (a first-token sink) and green diagonals. Hover a cell for both tokens, "
        "the score, the probability and the rank in the row."
    )
    return build_figure(
        key=key,
        title="Attention map",
        caption=caption,
        chart=chart,
        chunks=attention_map_rows(sentence),
        params=("layer", "head"),
        default=default,
    )
