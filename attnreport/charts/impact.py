"""Figures 7-10 and the index page's pooled head impact: what attention changes.

- Fig 7/8: histograms of ``magnitude = ||u||/||x||`` and ``orientation = cos(u, x)`` per
  head of a chosen layer, stacked by the head's top target for that token (self / first
  token / other), so the reader sees whether first-token heads write small updates.
- Fig 9: orientation against magnitude, one point per (token, head) of the chosen layer.
- Fig 10: ``||block output||/||x||`` against token position, one line per layer; purple
  points mark tokens for which at least one head of that layer attends most to the first
  token (point size = the share of such heads).
Figs 7-9 are chunked per layer (heads x tokens rows each).
"""

from __future__ import annotations

from typing import Any

import altair as alt

from attnreport.charts import common, widgets
from attnreport.charts.assemble import build_figure
from attnreport.charts.columns import as_list, rounded, select, sentence_tokens, sort_rows, table
from attnreport.charts.common import tip, token_axis
from attnreport.charts.figure import Columns, Figure
from attnreport.charts.theme import (
    FIRST_COLOR,
    KIND_DOMAIN,
    LAYER_SCHEME,
    MAGNITUDE_SCHEME,
    ORIENTATION_SCHEME,
    kind_scale,
)

# ``target`` column: 0 self, 1 first token, 2 other (KIND_DOMAIN order).
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
    sentence: dict[str, Any], fields: tuple[str, ...]
) -> dict[tuple[int], Columns]:
    """(layer,) -> rows layer, head, target (0/1/2) and ``fields`` of that layer."""
    impact = sort_rows(table(sentence, "head_impact"), ("layer", "head", "query"))
    top = table(sentence, "top")
    kind = {(int(a), int(b), int(c)): 0 if c == k else (1 if k == 0 else 2)
            for a, b, c, k in zip(top["layer"], top["head"], top["query"], top["top_key"], strict=True)}  # fmt: skip
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
    key: str, measure: str, n_layers: int, n_heads: int, layer: int
) -> alt.FacetChart:
    """Fig 7/8: one small histogram per head, bars stacked by top-target kind."""
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
                tip(f"{measure}:Q", name.lower(), ".3f"),
                tip("count():Q", "tokens"),
                tip("top_target:N", "head's top target"),
                tip("layer:O", "layer"),
                tip("head:O", "head"),
            ],
        )  # fmt: skip
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
        .add_params(widgets.layer_param(n_layers, layer))
        .properties(title=title)
    )


def scatter_chart(key: str, tokens: list[str], n_layers: int, layer: int) -> alt.Chart:
    """Fig 9: orientation against magnitude, one point per (token, head)."""
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
        )  # fmt: skip
        .add_params(widgets.tokens_param(tokens), widgets.layer_param(n_layers, layer))
        .properties(title=title, width=520, height=320)
    )


def block_impact_chart(key: str, tokens: list[str], n_layers: int, n_heads: int) -> alt.LayerChart:
    """Fig 10: block output norm ratio per token, one line per layer, first-token marks."""
    n = len(tokens)
    base = alt.Chart().encode(
        x=alt.X("query:O", **token_axis("token", n, angle=-60)),
        y=alt.Y("magnitude:Q", title="||attention block output|| / ||x||"),
        tooltip=[tip("token:N", "token"), tip("query:O", "position"), tip("layer:O", "layer"),
                 tip("magnitude:Q", "magnitude", ".3f"),
                 tip("top_first_heads:Q", "heads whose top target is the first token")],
    )  # fmt: skip
    lines = base.mark_line(strokeWidth=1.2, opacity=0.75).encode(
        color=alt.Color("layer:Q", scale=alt.Scale(scheme=LAYER_SCHEME),
                        legend=alt.Legend(title="layer", format="d")),
        detail="layer:O",
    )  # fmt: skip
    marks = (
        base.transform_filter("datum.top_first_heads > 0")
        .mark_point(filled=True, color=FIRST_COLOR, opacity=0.8, stroke="white", strokeWidth=0.5)
        .encode(size=alt.Size("share_first:Q", title="share of heads on the first token",
                              scale=alt.Scale(domain=[0, 1], range=[4, 90])))
    )  # fmt: skip
    title = alt.TitleParams(text="Impact by position",
                            subtitle="purple = some heads of that layer attend most to the first token")  # fmt: skip
    return (
        alt.layer(lines, marks, data=alt.Data(name=key))
        .transform_calculate(
            token="tokens[datum.query]", share_first=f"datum.top_first_heads / {max(n_heads, 1)}"
        )
        .add_params(widgets.tokens_param(tokens))
        .properties(title=title, width=alt.Step(common.cell_step(n, width=600, hi=28)), height=300)
    )


HISTOGRAM_CAPTIONS = {
    "magnitude": (
        "How strongly each head of the chosen layer changes the hidden state: the norm of "
        "the head's update relative to the norm of the hidden state, one histogram per head "
        "over the sentence's tokens. Colour says where the head looked most for that token; "
        "compare the purple (first-token) part with the rest."
    ),
    "orientation": (
        "The direction of each head's update: the cosine between the update and the hidden "
        "state, one histogram per head over the sentence's tokens. Near 0 the update is "
        "orthogonal to the hidden state; negative values cancel part of it."
    ),
}


def histogram_figure(sentence: dict[str, Any], measure: str) -> Figure:
    """Fig 7 (``magnitude``) or Fig 8 (``orientation``), chunked per layer."""
    n_layers, n_heads = common.n_layers_heads(sentence)
    layer = common.default_head(sentence)[0]
    key = "update-" + measure
    chart = histogram_chart(key, measure, n_layers, n_heads, layer)
    return build_figure(key=key, title=MEASURES[measure][0], caption=HISTOGRAM_CAPTIONS[measure],
                        chart=chart, chunks=head_impact_rows(sentence, (measure,)),
                        params=("layer",), default=(layer,))  # fmt: skip


def scatter_figure(sentence: dict[str, Any]) -> Figure:
    """Fig 9, chunked per layer."""
    n_layers, _ = common.n_layers_heads(sentence)
    layer = common.default_head(sentence)[0]
    key = "orientation-vs-magnitude"
    chart = scatter_chart(key, sentence_tokens(sentence), n_layers, layer)
    caption = (
        "Each point is one token and one head of the chosen layer: how strongly the head "
        "changes that token's hidden state (x) against the direction of the change (y). "
        "Points near y = 0 are orthogonal updates; points below 0 cancel part of the hidden "
        "state. Purple points are tokens the head attends to the first token for."
    )
    rows = head_impact_rows(sentence, ("query", "magnitude", "orientation"))
    return build_figure(key=key, title="Orientation vs magnitude", caption=caption, chart=chart,
                        chunks=rows, params=("layer",), default=(layer,))  # fmt: skip


def block_impact_figure(sentence: dict[str, Any]) -> Figure:
    """Fig 10, all layers inline (layers x tokens rows)."""
    n_layers, n_heads = common.n_layers_heads(sentence)
    block = sort_rows(table(sentence, "block_impact"), ("layer", "query"))
    rows: Columns = {name: as_list(block[name]) for name in ("layer", "query", "top_first_heads")}
    rows["magnitude"] = rounded(block["magnitude"])
    chart = block_impact_chart("impact-by-position", sentence_tokens(sentence), n_layers, n_heads)
    caption = (
        "The change made by the whole attention block (all heads together) relative to the "
        "hidden state, for every token, one line per layer (dark = early, yellow = late). "
        "Purple points mark tokens for which heads of that layer attend most to the first "
        "token; larger points mean more such heads. Check whether those tokens get smaller "
        "updates."
    )
    return build_figure(key="impact-by-position", title="Impact by position", caption=caption,
                        chart=chart, rows=rows)  # fmt: skip


def pooled_impact_chart(key: str) -> alt.HConcatChart:
    """Index: mean magnitude and mean orientation per (layer, head) over the set, as heatmaps."""
    base = alt.Chart().encode(
        x=alt.X("head:O", title="head"),
        y=alt.Y("layer:O", title="layer", sort="descending"),
        tooltip=[tip("layer:O", "layer"), tip("head:O", "head"),
                 tip("magnitude:Q", "mean ||u||/||x||", ".3f"),
                 tip("orientation:Q", "mean cos(u, x)", ".3f"), tip("n_tokens:Q", "tokens")],
    )  # fmt: skip
    magnitude = base.mark_rect().encode(
        color=alt.Color("magnitude:Q", scale=alt.Scale(scheme=MAGNITUDE_SCHEME),
                        legend=alt.Legend(title="mean ||u||/||x||"))
    ).properties(title="update magnitude", width=alt.Step(18), height=alt.Step(12))  # fmt: skip
    orientation = base.mark_rect().encode(
        color=alt.Color("orientation:Q", legend=alt.Legend(title="mean cos(u, x)"),
                        scale=alt.Scale(scheme=ORIENTATION_SCHEME, domain=[-1, 1], domainMid=0))
    ).properties(title="update orientation", width=alt.Step(18), height=alt.Step(12))  # fmt: skip
    title = alt.TitleParams(
        text="Head impact over the sentence set", subtitle="mean over every token"
    )
    return (
        alt.hconcat(magnitude, orientation, data=alt.Data(name=key))
        .resolve_scale(color="independent")
        .properties(title=title)
    )


def pooled_impact_figure(set_results: dict[str, Any]) -> Figure:
    """The index page's head impact figure (all rows inline: layers x heads)."""
    pooled = sort_rows(table(set_results, "impact_pooled"), ("layer", "head"))
    rows: Columns = {name: as_list(pooled[name]) for name in ("layer", "head", "n_tokens")}
    for name in ("magnitude", "orientation"):
        rows[name] = rounded(pooled[name])
    caption = (
        "For every layer (rows) and head (columns), the mean over all tokens of the set of "
        "how strongly the head changes the hidden state (left) and of the direction of the "
        "change (right: blue cancels part of the hidden state, orange adds along it). Look "
        "for heads that write large updates and for layers where updates turn negative."
    )
    key = "set-head-impact"
    return build_figure(key=key, title="Head impact over the sentence set", caption=caption,
                        chart=pooled_impact_chart(key), rows=rows)  # fmt: skip
