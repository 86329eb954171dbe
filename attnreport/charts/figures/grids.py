"""Chart builders of Figures 11 and 12: grids of post-softmax attention maps, KL below.

Each grid cell is one (tensor, scale factor) or (input, tensor) pair; rows of the
dataset carry ``head`` and ``observation`` (filtered by the widgets), ``query``, ``key``,
``prob`` and ``kl`` (the KL divergence at position ``query``, repeated along the row).
The KL chart under each grid keeps one row per position (``key == query``).
"""

from __future__ import annotations

import json

import altair as alt

from attnreport.charts.spec import common, widgets
from attnreport.charts.spec.common import tip
from attnreport.charts.spec.theme import CATEGORY_RANGE, attention_scale
from attnreport.vocabulary import TARGETS

OBSERVATIONS = ("same", "next", "last")
SELECTED = "datum.head == head && datum.observation == observation"


UNMODIFIED = "unmodified"  # the column of the run without intervention (\u03b5 = 1)


def epsilon_label(epsilon: float) -> str:
    """Column header of a scaling factor: "ε = 0.001"; ε = 1 is the unmodified run."""
    return UNMODIFIED if epsilon == 1 else f"\u03b5 = {epsilon:g}"


def facet(panel: alt.Chart, name: str, **mapping: alt.Facet) -> alt.FacetChart:
    """A row/column facet of ``panel`` without its own data (it reads the parent's).

    ``name`` is required: Altair names concatenated views when it lifts their params.
    """
    return alt.FacetChart(
        spec=panel.properties(name=name + "_panel"), facet=alt.FacetMapping(**mapping), name=name
    )


def observed_expr(observed: dict[str, int]) -> str:
    return (
        "{"
        + ", ".join(f"'{k}': {int(observed.get(k, -1))}" for k in OBSERVATIONS)
        + "}[observation]"
    )


def _panel_tooltips(first: list[alt.Tooltip]) -> list[alt.Tooltip]:
    return [
        *first,
        *common.token_tips(),
        tip("prob:Q", "attention weight", ".4f"),
        tip("kl:Q", "KL at this position", ".4g"),
        tip("head:O", "head"),
        tip("observed_layer:O", "observed layer"),
    ]


def heat_panel(n: int, tips: list[alt.Tooltip], fit: bool = False) -> alt.Chart:
    """One post-softmax attention map cell (0..1 colour scale) on positions 0..n-1.

    Every cell shares the position scales (a shorter input leaves the end empty), unless
    ``fit``: then each cell has its own (the facet resolves them independently) and a
    fixed size, so every input fills its square with no padded rows. Vega-Lite fails at
    run time on faceted step-sized cells with independent scales, hence the fixed size.
    """
    step = common.cell_step(n, width=220, lo=2, hi=14)
    domain = list(range(n))
    axis = alt.Axis(labelAngle=0, values=domain[:: max(1, n // 6)])
    scale = alt.Scale() if fit else alt.Scale(domain=domain)
    size = {"width": step * n, "height": step * n} if fit else {}
    size = size or {"width": alt.Step(step), "height": alt.Step(step)}
    return (
        alt.Chart()
        .mark_rect()
        .encode(
            x=alt.X("key:O", title="target token", axis=axis, scale=scale),
            y=alt.Y("query:O", title="current token", axis=axis, scale=scale),
            color=alt.Color(
                "prob:Q", scale=attention_scale([0, 1]), legend=alt.Legend(title="attention weight")
            ),
            tooltip=_panel_tooltips(tips),
        )
        .properties(**size)
    )


# One dash pattern per cell kind, beside its colour: two cells with the same KL (every
# ε small enough to flatten attention) draw the same line, and only the dashes show both.
DASHES = [[1, 0], [6, 3], [2, 2], [8, 2, 2, 2], [4, 4], [1, 3], [10, 4]]


def kl_panel(
    color_field: str, color_sort: list[str], tips: list[alt.Tooltip], title: str = "cell"
) -> alt.Chart:
    """KL(p_base || p_modified) of the next-token distribution against position, one
    colour-blind-safe colour (``CATEGORY_RANGE``) and dash pattern (``DASHES``) per cell
    kind; the unmodified run (KL 0 by definition, ``UNMODIFIED`` in ``color_field``) is
    not drawn."""
    field = color_field.split(":")[0]
    return (
        alt.Chart()
        .transform_filter(f"datum.key == datum.query && datum.{field} != '{UNMODIFIED}'")
        .mark_line(point=alt.OverlayMarkDef(size=14), strokeWidth=1.2)
        .encode(
            x=alt.X("query:Q", title="position", axis=alt.Axis(format="d", tickMinStep=1)),
            y=alt.Y("kl:Q", title="KL divergence (nats)"),
            color=alt.Color(
                color_field,
                sort=color_sort,
                title=title,
                scale=alt.Scale(domain=color_sort, range=CATEGORY_RANGE[: len(color_sort)]),
            ),
            strokeDash=alt.StrokeDash(
                color_field,
                sort=color_sort,
                scale=alt.Scale(domain=color_sort, range=DASHES[: len(color_sort)]),
                legend=None,  # the colour legend names the cells; the dashes tell them apart
            ),
            tooltip=[
                *tips,
                tip("query_token:N", "token"),
                tip("query:O", "position"),
                tip("kl:Q", "KL divergence", ".4g"),
            ],
        )
        .properties(width=220, height=110)
    )


def scaling_chart(
    key: str,
    tokens: list[str],
    epsilons: list[float],
    n_heads: int,
    observed: dict[str, int],
    head: int,
) -> alt.VConcatChart:
    """Fig 11: rows Q, K, V; columns epsilon (every one, or the unmodified run and the one
    chosen with ``eps``); below, KL per position for every cell, one panel per tensor."""
    labels = [epsilon_label(e) for e in epsilons]
    tips = [tip("target:N", "tensor scaled"), tip("eps:N", "scale factor")]
    grid = facet(
        heat_panel(len(tokens), tips),
        "grid",
        row=alt.Facet("target:N", sort=list(TARGETS), title="tensor scaled"),
        column=alt.Facet("eps:N", sort=[UNMODIFIED, *labels], title="scale factor"),
    )
    kl = alt.FacetChart(
        spec=kl_panel("eps:N", labels, tips, "scale factor").properties(name="kl_panel"),
        facet=alt.Facet("target:N", sort=list(TARGETS), title="tensor scaled"),
        columns=len(TARGETS),  # wrapped, so that a narrow page puts them in fewer columns
        name="kl",
    )
    title = common.selection_title(
        "Attention after scaling Q, K or V", "colour: post-softmax weight", "head", "observation"
    )
    return (
        alt.vconcat(grid, kl, data=alt.Data(name=key))
        .transform_filter(SELECTED)
        .transform_filter(epsilon_filter(epsilons))
        .transform_calculate(
            query_token="tokens[datum.query]",
            key_token="tokens[datum.key]",
            observed_layer=observed_expr(observed),
        )
        .add_params(
            widgets.tokens_param(tokens),
            widgets.head_param(n_heads, head),
            widgets.observation_param(observed),
            widgets.epsilon_param(
                [e for e in epsilons if e != 1], [epsilon_label(e) for e in epsilons if e != 1]
            ),
        )
        .properties(title=title)
    )


def epsilon_filter(epsilons: list[float]) -> str:
    """Rows of the scale factor chosen with ``eps`` (page state) and of the unmodified run,
    or every row when ``eps`` is ``widgets.EVERY_EPSILON``. The chosen number is looked up
    among ``epsilons`` (a JSON list), whose labels are the column headers."""
    scaled = [e for e in epsilons if e != 1]
    values = json.dumps([float(e) for e in scaled])
    labels = json.dumps([epsilon_label(e) for e in scaled], ensure_ascii=False)
    return (
        f"eps == '{widgets.EVERY_EPSILON}' || datum.eps == '{UNMODIFIED}' || "
        f"datum.eps == {labels}[indexof({values}, eps)]"
    )


KL_COLUMNS = 2  # the mean grid's KL panels (one per input) wrap after this many


def mean_chart(
    key: str,
    tokens: dict[str, list[str]],
    n_heads: int,
    observed: dict[str, int],
    head: int,
    texts: dict[str, str] | None = None,
    targets: tuple[str, ...] = TARGETS,
    title: str = "Attention after replacing Q, K or V by its mean",
) -> alt.VConcatChart:
    """Fig 12: rows = inputs, columns the unmodified run and ``targets`` replaced by their
    mean; below, KL per position (panels wrapping after ``KL_COLUMNS``). ``texts``: each
    input's whole sentence by its index, for the tooltips (the row labels are cut short)."""
    tips = [
        tip("input_text:N", "input"),
        tip("target:N", "tensor replaced by its mean"),
    ]
    n = max((len(t) for t in tokens.values()), default=1)
    by_input = alt.EncodingSortField("sentence", op="min")
    grid = facet(
        heat_panel(n, tips, fit=True),
        "grid",
        row=alt.Facet(
            "input:N",
            sort=by_input,
            title="input",
            header=alt.Header(labelLimit=160, labelAngle=0, labelAlign="left"),
        ),
        column=alt.Facet(
            "target:N", sort=[UNMODIFIED, *targets], title="tensor replaced by its mean"
        ),
    ).resolve_scale(x="independent", y="independent")
    kl = alt.FacetChart(
        spec=kl_panel("target:N", list(targets), tips, "tensor replaced").properties(
            name="kl_panel"
        ),
        facet=alt.Facet("input:N", sort=by_input, title="input", header=alt.Header(labelLimit=200)),
        columns=KL_COLUMNS,
        name="kl",
    )
    title = common.selection_title(title, "colour: post-softmax weight", "head", "observation")
    token_expr = "sentence_tokens[datum.sentence] ? sentence_tokens[datum.sentence][datum.{}] : '#' + datum.{}"
    return (
        alt.vconcat(grid, kl, data=alt.Data(name=key))
        .transform_filter(SELECTED)
        .transform_calculate(
            query_token=token_expr.format("query", "query"),
            key_token=token_expr.format("key", "key"),
            observed_layer=observed_expr(observed),
            input_text="sentence_texts[datum.sentence] || datum.input",
        )
        .add_params(
            alt.param(name="sentence_texts", value=texts or {}),
            widgets.tokens_param(tokens, name="sentence_tokens"),
            widgets.head_param(n_heads, head),
            widgets.observation_param(observed),
        )
        .properties(title=title)
    )
