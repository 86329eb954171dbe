"""Comparison figures: several models on one chart, one colour per model.

Per-layer curves are drawn against relative depth (``layer / (L - 1)``), so models of
different depths share the x axis, the share of each layer's heads per role too (one
panel per role); role counts and the intervention KL are grouped bars.
Rows come from ``attnreport.multi.measures`` (its column names are the fields here).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import altair as alt

from attnreport.analyses import sinks
from attnreport.analyses.kl import KL_CONVENTION, KL_NAME
from attnreport.analyses.role_rules import MIN_REPEATS, ROLE_THRESHOLD
from attnreport.charts.figure import Columns, Figure
from attnreport.charts.spec import scales
from attnreport.charts.spec.assemble import build_figure
from attnreport.charts.spec.common import tip
from attnreport.charts.spec.theme import CATEGORY_RANGE
from attnreport.multi.measures import CURVES

CURVE_KEYS = {statistic: f"compare-{statistic.replace('_', '-')}" for statistic in CURVES}
ROLES_KEY = "compare-roles"
ROLE_CURVES_KEY = "compare-role-curves"
KL_KEY = "compare-kl"
CAPTIONS = {
    "first_focus": "For every layer, the share of queries whose top key is the first token, "
    "averaged over the layer's heads and pooled over the set; one line per model.",
    "sink_rate": "For every layer, the percentage of its heads that Gu et al. (ICLR 2025) "
    "count as attention sinks: the first token gets more than 0.3 of the head's attention "
    "on average.",
    "self_focus": "For every layer, the share of queries whose top key is the query itself, "
    "averaged over the layer's heads and pooled over the set.",
    "head_impact": "For every layer, the size of the heads' updates relative to the hidden "
    "state they are added to (||u|| / ||x||), averaged over the layer's heads and the "
    "set's tokens.",
}
# The y scale of each curve: shares on their whole range (the sink rate on 0-100); update
# sizes, ratios, from their values (``scales.ratio_scale``: a log scale when they span
# decades, as Gemma-3's first layers, twice the hidden state, against its last, 3%)
RATIOS = ("head_impact",)
DEPTH_NOTE = (
    " The x axis is relative depth, layer / (L - 1): 0 is each model's first layer and 1 "
    "its last, so a point is a layer and the models' layers fall at different depths."
)


# the tooltips every comparison chart drawn against depth shows (its own follow them)
MODEL_TIP = tip("model:N", "model")
DEPTH_TIP = tip("depth:Q", "relative depth", ".2f")


def model_color(models: Sequence[str]) -> alt.Color:
    """One colour per model, in the report's order (``theme.CATEGORY_RANGE``)."""
    range_ = [CATEGORY_RANGE[i % len(CATEGORY_RANGE)] for i in range(len(models))]
    return alt.Color(
        "model:N",
        scale=alt.Scale(domain=list(models), range=range_),
        legend=alt.Legend(title="model", orient="bottom", labelLimit=360),
    )


def _only(rows: Columns, statistic: str) -> Columns:
    keep = [i for i, s in enumerate(rows["statistic"]) if s == statistic]
    return {name: [values[i] for i in keep] for name, values in rows.items()}


def _y_scale(statistic: str, values: Sequence[float]) -> alt.Scale:
    if statistic == "sink_rate":
        return alt.Scale(domain=[0, 100])
    return scales.ratio_scale(values) if statistic in RATIOS else alt.Undefined


def measured_as(rows: Columns, measured: Mapping[str, str]) -> tuple[Columns, str]:
    """``rows`` with a ``measured`` column (how each model's values were taken, by model:
    ``measured``), and the caption sentence naming each; ``rows`` and "" when every model
    took them alike (nothing to tell apart)."""
    kinds = {measured.get(m, "") for m in rows["model"]}
    if len(kinds) < 2:
        return rows, ""
    out = {**rows, "measured": [measured.get(m, "") for m in rows["model"]]}
    named = "; ".join(f"{m}: {measured[m]}" for m in dict.fromkeys(rows["model"]) if m in measured)
    return out, (
        f" The models' update sizes are taken differently ({named}), so the line's dash says "
        "how each was taken."
    )


def curve_figure(
    rows: Columns,
    statistic: str,
    models: Sequence[str],
    measured: Mapping[str, str] | None = None,
) -> Figure:
    """One per-layer measure of every model against relative depth (``measures.curve_rows``);
    ``measured``: how each model's values were taken, by model name, when models may take
    them differently (update sizes before or after a post-attention norm): models that
    differ get a dash each, named in the legend, the tooltip and the caption."""
    key = CURVE_KEYS[statistic]
    name, axis = CURVES[statistic]
    rows, taken = measured_as(_only(rows, statistic), measured or {})
    y = alt.Y("value:Q", title=axis, scale=_y_scale(statistic, rows["value"]))
    dash = {}
    if taken:
        dash["strokeDash"] = alt.StrokeDash(
            "measured:N", legend=alt.Legend(title="update size", orient="bottom", labelLimit=420)
        )
    chart = (
        alt.Chart(alt.Data(name=key))
        .mark_line(point=alt.OverlayMarkDef(size=30), strokeWidth=1.8)
        .encode(
            x=alt.X(
                "depth:Q", title="relative depth (layer / (L - 1))", scale=alt.Scale(domain=[0, 1])
            ),  # fmt: skip
            y=y,
            color=model_color(models),
            tooltip=[
                MODEL_TIP,
                tip("layer:Q", "layer"),
                DEPTH_TIP,
                tip("value:Q", name, ".3g"),
                *([tip("measured:N", "taken")] if taken else []),
            ],
            **dash,
        )
        .properties(
            title=alt.TitleParams(
                text=f"{name.capitalize()} by relative depth",
                subtitle="pooled over the sentence set",
            ),  # fmt: skip
            width=520,
            height=240,
        )
    )
    words = scales.scale_words(rows["value"]) if statistic in RATIOS else ""
    return build_figure(
        key=key,
        title=f"{name.capitalize()} by relative depth",
        caption=CAPTIONS[statistic] + taken + words + DEPTH_NOTE,
        chart=chart,
        rows=rows,
    )


def _bars(key: str, models: Sequence[str], x: alt.X, y: alt.Y, tips: list[alt.Tooltip], title: str, size: tuple[int, int]) -> alt.Chart:  # fmt: skip
    """Bars grouped by ``x``, one per model side by side, in the models' colours."""
    return (
        alt.Chart(alt.Data(name=key))
        .mark_bar()
        .encode(
            x=x,
            xOffset=alt.XOffset("model:N", sort=list(models)),
            y=y,
            color=model_color(models),
            tooltip=[MODEL_TIP, *tips],
        )
        .properties(title=title, width=size[0], height=size[1])
    )


def roles_figure(rows: Columns, models: Sequence[str]) -> Figure:
    """How many heads of each model take each role (``measures.role_count_rows``)."""
    title = "Head roles per model"
    chart = _bars(
        ROLES_KEY,
        models,
        alt.X("role:N", title=None, sort=None, axis=alt.Axis(labelAngle=0, labelLimit=140)),
        alt.Y("percent:Q", title="heads (% of the model's heads)"),
        [tip("role:N", "role"), tip("heads:Q", "heads"), tip("percent:Q", "% of heads", ".0f")],
        title,
        (520, 220),
    )
    caption = (
        "The share of each model's heads that take each role (a head's strongest role "
        f"score at {ROLE_THRESHOLD:g} or more, as in each model's head atlas; else a sink when "
        f"the first token gets more than {sinks.EPS:g} of its attention). The duplicate-token "
        f"role needs at least {MIN_REPEATS} repeated-token queries in a model's set (each "
        "head atlas gives its number). Shares, not counts: the models have different numbers "
        "of heads."
    )
    return build_figure(key=ROLES_KEY, title=title, caption=caption, chart=chart, rows=rows)


def role_curves_chart(models: Sequence[str], roles: Sequence[str]) -> alt.FacetChart:
    """Per role (a wrapped facet, 2 columns; the runtime wraps it to 1 on a phone): the
    percentage of each layer's heads with that role against relative depth, a line per
    model (``measures.role_layer_rows``)."""
    percent = alt.Scale(domain=[0, 100])
    panel = (
        alt.Chart()
        .mark_line(point=alt.OverlayMarkDef(size=24), strokeWidth=1.6)
        .encode(
            x=alt.X("depth:Q", title="relative depth", scale=alt.Scale(domain=[0, 1])),
            y=alt.Y("percent:Q", title="% of the layer's heads", scale=percent),
            color=model_color(models),
            tooltip=[
                MODEL_TIP,
                tip("role:N", "role"),
                tip("layer:Q", "layer"),
                DEPTH_TIP,
                tip("heads:Q", "heads with the role"),
                tip("of:Q", "heads of the layer"),
                tip("percent:Q", "% of the layer's heads", ".0f"),
            ],
        )
        .properties(width=240, height=130)
    )
    return panel.facet(
        facet=alt.Facet("role:N", title=None, sort=list(roles)),
        columns=2,
        data=alt.Data(name=ROLE_CURVES_KEY),
    ).properties(
        title=alt.TitleParams(
            text="Head roles by relative depth", subtitle="one panel per role, a line per model"
        )
    )


def role_curves_figure(rows: Columns, models: Sequence[str]) -> Figure:
    """Where in depth each model's heads of each role sit (``measures.role_layer_rows``)."""
    roles = list(dict.fromkeys(rows["role"]))
    caption = (
        "For every layer, the percentage of its heads that take each role, by the head "
        "atlas's rule (a head's strongest role score at 0.3 or more; else a sink when the "
        "first token gets more than 0.3 of its attention); one panel per role, one line "
        "per model. Heads with no role are left out, so a layer's four points sum to 100 "
        "at most." + DEPTH_NOTE
    )
    return build_figure(
        key=ROLE_CURVES_KEY,
        title="Head roles by relative depth",
        caption=caption,
        chart=role_curves_chart(models, roles),
        rows=rows,
    )


def kl_figure(rows: Columns, models: Sequence[str], match: str) -> Figure:
    """The next-token KL of every intervention, per model at its own intervention layer."""
    title = "Next-token change under each intervention"
    chart = _bars(
        KL_KEY,
        models,
        alt.X("cell:N", title="intervention", sort=None, axis=alt.Axis(labelAngle=0)),
        alt.Y("mean_kl:Q", title="mean KL of the next token (nats)"),
        [
            tip("cell:N", "intervention"),
            tip("layer:Q", "at layer"),
            DEPTH_TIP,
            tip("mean_kl:Q", "mean KL (nats)", ".3g"),
            tip("low:Q", "lowest sentence", ".3g"),
            tip("high:Q", "highest sentence", ".3g"),
            tip("sentences:Q", "sentences"),
        ],
        title,
        (560, 240),
    )
    caption = (
        "Q, K or V of every head of one layer scaled by epsilon or replaced by its mean "
        "over positions; the bar is KL(p_base || p_modified) of the next-token "
        f"distribution, in nats, as the {KL_NAME}: {KL_CONVENTION} (the tooltip gives the "
        "lowest and highest sentence). Scaling Q or K by "
        "epsilon is one intervention (every score becomes epsilon q\u00b7k either way), so it "
        "is one bar, Q or K. " + match
    )
    return build_figure(key=KL_KEY, title=title, caption=caption, chart=chart, rows=rows)
