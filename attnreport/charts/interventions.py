"""Figures 11 and 12: attention after scaling Q, K or V, and after replacing it by its mean.

Input is ``interventions.json`` as loaded. Every cell holds, for each observation
(``same`` = the intervened layer, ``next``, ``last``) and head, the post-softmax triangle
after the intervention, plus the KL divergence of the next-token distribution at every
position. Both figures are chunked per (head, observation): 9 cells of n(n+1)/2 rows.
Below each grid a small chart draws the KL divergence per position for every cell.
"""

from __future__ import annotations

from typing import Any

import altair as alt

from attnreport.charts import common, widgets
from attnreport.charts.assemble import build_figure
from attnreport.charts.columns import flatten, rounded, sentence_tokens, table, triangle_index
from attnreport.charts.common import tip
from attnreport.charts.figure import Columns, Figure
from attnreport.charts.theme import attention_scale, display_token

TARGETS = ("Q", "K", "V")
OBSERVATIONS = ("same", "next", "last")
SELECTED = "datum.head == head && datum.observation == observation"


def facet(panel: alt.Chart, name: str, **mapping: alt.Facet) -> alt.FacetChart:
    """A row/column facet of ``panel`` without its own data (it reads the parent's).

    ``name`` is required: Altair names concatenated views when it lifts their params.
    """
    return alt.FacetChart(
        spec=panel.properties(name=name + "_panel"), facet=alt.FacetMapping(**mapping), name=name
    )


def epsilon_label(epsilon: float) -> str:
    """Column header of a scaling factor: "ε = 0.001"."""
    return f"\u03b5 = {epsilon:g}"


def cell_rows(cell: dict[str, Any], head: int, observation: str, extra: dict[str, Any]) -> Columns:
    """Rows of one grid cell for one head and observation: query, key, prob, kl, + extras."""
    triangle = cell["observations"][observation][head]
    query, key = triangle_index(len(triangle))
    kl = rounded(cell["kl"])
    count = len(query)
    rows: Columns = {"head": [head] * count, "observation": [observation] * count}
    rows.update({name: [value] * count for name, value in extra.items()})
    rows.update(query=query.tolist(), key=key.tolist(), prob=rounded(flatten(triangle)))
    rows["kl"] = [kl[q] if q < len(kl) else 0.0 for q in rows["query"]]
    return rows


def concat_rows(parts: list[Columns]) -> Columns:
    """Rows of several tables with the same columns, one after the other."""
    return {name: [v for part in parts for v in part[name]] for name in parts[0]} if parts else {}


def grid_rows(
    cells: list[dict[str, Any]], n_heads: int, label: Any
) -> dict[tuple[int, str], Columns]:
    """(head, observation) -> rows of every cell; ``label(cell)`` gives each cell's extra columns."""
    out = {}
    for head in range(n_heads):
        for observation in OBSERVATIONS:
            out[(head, observation)] = concat_rows(
                [cell_rows(c, head, observation, label(c)) for c in cells]
            )
    return out


def _observed_expr(observed: dict[str, int]) -> str:
    return (
        "{"
        + ", ".join(f"'{k}': {int(observed.get(k, -1))}" for k in OBSERVATIONS)
        + "}[observation]"
    )


def _panel_tooltips(first: list[alt.Tooltip]) -> list[alt.Tooltip]:
    return [
        *first,
        tip("query_token:N", "current token"),
        tip("key_token:N", "target token"),
        tip("prob:Q", "attention weight", ".4f"),
        tip("kl:Q", "KL at this position", ".4g"),
        tip("head:O", "head"),
        tip("observed_layer:O", "observed layer"),
    ]


def heat_panel(n: int, tips: list[alt.Tooltip]) -> alt.Chart:
    """One post-softmax attention map cell (0..1 colour scale) on positions 0..n-1.

    Every cell shares the position scales (a shorter input leaves the end empty):
    Vega-Lite fails at run time on faceted step-sized cells with independent scales.
    """
    step = common.cell_step(n, width=220, lo=2, hi=14)
    domain = list(range(n))
    axis = alt.Axis(labelAngle=0, values=domain[:: max(1, n // 6)])
    return (
        alt.Chart()
        .mark_rect()
        .encode(
            x=alt.X("key:O", title="target token", axis=axis, scale=alt.Scale(domain=domain)),
            y=alt.Y("query:O", title="current token", axis=axis, scale=alt.Scale(domain=domain)),
            color=alt.Color(
                "prob:Q", scale=attention_scale([0, 1]), legend=alt.Legend(title="attention weight")
            ),
            tooltip=_panel_tooltips(tips),
        )
        .properties(width=alt.Step(step), height=alt.Step(step))
    )


def kl_panel(color_field: str, color_sort: list[str], tips: list[alt.Tooltip]) -> alt.Chart:
    """KL(p_base || p_modified) of the next-token distribution against position."""
    return (
        alt.Chart()
        .transform_filter("datum.key == datum.query")
        .mark_line(point=alt.OverlayMarkDef(size=14), strokeWidth=1.2)
        .encode(
            x=alt.X("query:Q", title="position", axis=alt.Axis(format="d", tickMinStep=1)),
            y=alt.Y("kl:Q", title="KL divergence (nats)"),
            color=alt.Color(
                color_field,
                sort=color_sort,
                title="cell",
                scale=alt.Scale(range=["#111111", "#666666", "#aaaaaa"]),
            ),
            tooltip=[
                *tips,
                tip("query_token:N", "token"),
                tip("query:O", "position"),
                tip("kl:Q", "KL divergence", ".4g"),
            ],
        )  # fmt: skip
        .properties(width=220, height=110)
    )


def scaling_chart(key: str, tokens: list[str], epsilons: list[float], n_heads: int,
                  observed: dict[str, int], head: int) -> alt.VConcatChart:  # fmt: skip
    """Fig 11: rows Q, K, V; columns epsilon; below, KL per position for every cell."""
    labels = [epsilon_label(e) for e in epsilons]
    tips = [tip("target:N", "tensor scaled"), tip("eps:N", "scale factor")]
    grid = facet(
        heat_panel(len(tokens), tips),
        "grid",
        row=alt.Facet("target:N", sort=list(TARGETS), title="tensor scaled"),
        column=alt.Facet("eps:N", sort=labels, title="scale factor"),
    )
    kl = facet(
        kl_panel("eps:N", labels, tips),
        "kl",
        column=alt.Facet("target:N", sort=list(TARGETS), title="tensor scaled"),
    )
    title = common.selection_title("Attention after scaling Q, K or V", "colour: post-softmax weight",
                                   "head", "observation")  # fmt: skip
    return (
        alt.vconcat(grid, kl, data=alt.Data(name=key))
        .transform_filter(SELECTED)
        .transform_calculate(
            query_token="tokens[datum.query]",
            key_token="tokens[datum.key]",
            observed_layer=_observed_expr(observed),
        )  # fmt: skip
        .add_params(
            widgets.tokens_param(tokens),
            widgets.head_param(n_heads, head),
            widgets.observation_param(observed),
        )  # fmt: skip
        .properties(title=title)
    )


def mean_chart(key: str, tokens: dict[str, list[str]], n_heads: int, observed: dict[str, int],
               head: int) -> alt.VConcatChart:  # fmt: skip
    """Fig 12: rows = inputs, columns Q, K, V replaced by their mean; below, KL per position."""
    tips = [tip("input:N", "input"), tip("target:N", "tensor replaced by its mean")]
    n = max((len(t) for t in tokens.values()), default=1)
    by_input = alt.EncodingSortField("sentence", op="min")
    grid = facet(
        heat_panel(n, tips),
        "grid",
        row=alt.Facet("input:N", sort=by_input, title="input",
                      header=alt.Header(labelLimit=160, labelAngle=0, labelAlign="left")),
        column=alt.Facet("target:N", sort=list(TARGETS), title="tensor replaced by its mean"),
    )  # fmt: skip
    kl = facet(
        kl_panel("target:N", list(TARGETS), tips),
        "kl",
        column=alt.Facet(
            "input:N", sort=by_input, title="input", header=alt.Header(labelLimit=200)
        ),
    )
    title = common.selection_title("Attention after replacing Q, K or V by its mean",
                                   "colour: post-softmax weight", "head", "observation")  # fmt: skip
    token_expr = "sentence_tokens[datum.sentence] ? sentence_tokens[datum.sentence][datum.{}] : '#' + datum.{}"
    return (
        alt.vconcat(grid, kl, data=alt.Data(name=key))
        .transform_filter(SELECTED)
        .transform_calculate(
            query_token=token_expr.format("query", "query"),
            key_token=token_expr.format("key", "key"),
            observed_layer=_observed_expr(observed),
        )  # fmt: skip
        .add_params(
            widgets.tokens_param(tokens, name="sentence_tokens"),
            widgets.head_param(n_heads, head),
            widgets.observation_param(observed),
        )  # fmt: skip
        .properties(title=title)
    )


def _listed_sentences(manifest: dict[str, Any]) -> dict[int, dict[str, Any]]:
    """index -> the manifest's entry for that sentence (``text``, ``tokens`` when present)."""
    listed = manifest.get("sentences") or []
    return {int(s.get("index", i)): s for i, s in enumerate(listed) if isinstance(s, dict)}


def _tokens_of(index: int, sentence: dict[str, Any], manifest: dict[str, Any]) -> list[str] | None:
    """Display tokens of sentence ``index``: from ``sentence`` if it is that one, else the manifest."""
    if int(sentence["sentence"]["index"]) == index:
        return sentence_tokens(sentence)
    entry = _listed_sentences(manifest).get(index, {})
    tokens = entry.get("tokens")
    return [display_token(str(t)) for t in tokens] if isinstance(tokens, list) else None


def _default_head(sentence: dict[str, Any], interventions: dict[str, Any], n_heads: int) -> int:
    """The head with the strongest first-token focus at the intervened layer (0 if unknown)."""
    focus = table(sentence, "focus")
    layer = int(interventions.get("layer", 0))
    best = [(-f, int(h)) for la, h, f in zip(focus["layer"], focus["head"], focus["first_focus"], strict=True)
            if int(la) == layer and int(h) < n_heads]  # fmt: skip
    return min(best)[1] if best else 0


def _n_heads(cells: list[dict[str, Any]]) -> int:
    return len(cells[0]["observations"]["same"]) if cells else 0


def scaling_figure(
    interventions: dict[str, Any], sentence: dict[str, Any], manifest: dict[str, Any]
) -> Figure:
    """Fig 11 as a Figure, chunked per (head, observation)."""
    scaling = interventions["scaling"]
    cells, epsilons = scaling["cells"], list(interventions["epsilons"])
    order = {(t, e): i for i, (t, e) in enumerate((t, e) for t in TARGETS for e in epsilons)}
    cells = sorted(cells, key=lambda c: order.get((c["target"], c["epsilon"]), len(order)))
    n_heads = _n_heads(cells)
    index = int(scaling["sentence"])
    n = len(cells[0]["kl"]) if cells else 0
    tokens = _tokens_of(index, sentence, manifest) or [f"#{i}" for i in range(n)]
    head = _default_head(sentence, interventions, n_heads)
    observed = {k: int(v) for k, v in interventions["observed_layers"].items()}
    chart = scaling_chart("scaling-grid", tokens, epsilons, n_heads, observed, head)
    rows = grid_rows(
        cells, n_heads, lambda c: {"target": c["target"], "eps": epsilon_label(c["epsilon"])}
    )
    caption = (
        f"Layer {interventions['layer']}: Q, K or V of every head is multiplied by a factor "
        "\u03b5 (columns) and attention is recomputed in a real forward pass; each cell is "
        "the post-softmax attention map of the chosen head. Scaling Q or K tempers the "
        "scores towards uniform causal attention. Scaling V leaves this layer's weights "
        "unchanged by construction: choose the next or the last layer to see its effect. "
        "Below, the KL divergence of the next-token distribution from the unmodified run at "
        "each position, for every cell."
    )
    return build_figure(key="scaling-grid", title="Scaling Q, K and V", caption=caption, chart=chart,
                        chunks=rows, params=("head", "observation"), default=(head, "same"),
                        renderer="canvas")  # fmt: skip


def _input_label(index: int, manifest: dict[str, Any]) -> str:
    text = str(_listed_sentences(manifest).get(index, {}).get("text", "")).strip()
    short = display_token(text[:28] + ("\u2026" if len(text) > 28 else "")) if text else ""
    return f"sentence {index}" + (f": {short}" if short else "")


def mean_figure(
    interventions: dict[str, Any], sentence: dict[str, Any], manifest: dict[str, Any]
) -> Figure:
    """Fig 12 as a Figure, chunked per (head, observation)."""
    mean = interventions["mean"]
    chosen = [int(i) for i in mean["sentences"]]
    place = {(i, t): k for k, (i, t) in enumerate((i, t) for i in chosen for t in TARGETS)}
    cells = sorted(
        mean["cells"], key=lambda c: place.get((int(c["sentence"]), c["target"]), len(place))
    )
    n_heads = _n_heads(cells)
    tokens = {str(i): t for i in chosen if (t := _tokens_of(i, sentence, manifest)) is not None}
    head = _default_head(sentence, interventions, n_heads)
    observed = {k: int(v) for k, v in interventions["observed_layers"].items()}
    chart = mean_chart("mean-grid", tokens, n_heads, observed, head)
    labels = {i: _input_label(i, manifest) for i in chosen}
    rows = grid_rows(cells, n_heads, lambda c: {"sentence": int(c["sentence"]), "input": labels[int(c["sentence"])],
                                                "target": c["target"]})  # fmt: skip
    caption = (
        f"Layer {interventions['layer']}: for each of {len(chosen)} inputs (rows), Q, K or V "
        "(columns) of every head is replaced by its mean over the token positions and "
        "attention is recomputed; each cell is the post-softmax attention map of the chosen "
        "head. With Q replaced, every current token scores the targets alike; with K "
        "replaced, every target gets the same score, so attention is uniform; replacing V "
        "leaves this layer's weights unchanged, so observe the next or last layer. Below, "
        "the KL divergence of the next-token distribution per position."
    )
    return build_figure(key="mean-grid", title="Replacing Q, K and V by their mean", caption=caption,
                        chart=chart, chunks=rows, params=("head", "observation"), default=(head, "same"),
                        renderer="canvas")  # fmt: skip
