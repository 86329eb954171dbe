"""Chart builders of Figures 11 and 12: grids of post-softmax attention maps, KL below.

Each grid cell is one (tensor, scale factor) or (input, tensor) pair; rows of the
dataset carry ``head`` and ``observation`` (filtered by the widgets), ``query``, ``key``,
``prob`` and ``kl`` (the KL divergence at position ``query``, repeated along the row).
The KL chart under each grid keeps one row per position (``key == query``).
"""

from __future__ import annotations

import json

import altair as alt

from attnreport.charts.figures.kl_strip import UNMODIFIED, Strip, kl_panel
from attnreport.charts.spec import common, widgets
from attnreport.charts.spec.common import tip
from attnreport.charts.spec.theme import attention_scale
from attnreport.vocabulary import TARGETS

OBSERVATIONS = ("same", "next", "last")
SELECTED = "datum.head == head && datum.observation == observation"


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


def heat_panel(
    n: int, tips: list[alt.Tooltip], fit: bool = False, width: float = 220, hi: float = 14
) -> alt.Chart:
    """One post-softmax attention map cell (0..1 colour scale) on positions 0..n-1.

    Every cell shares the position scales (a shorter input leaves the end empty), unless
    ``fit``: then each cell has its own (the facet resolves them independently) and a
    fixed size, so every input fills its square with no padded rows. Vega-Lite fails at
    run time on faceted step-sized cells with independent scales, hence the fixed size.
    ``width``: about the cell's width in pixels, ``hi`` the largest step (a short input's
    map is then narrower).
    """
    step = common.cell_step(n, width=width, lo=2, hi=hi)
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


def scaling_chart(
    key: str,
    tokens: list[str],
    epsilons: list[float],
    n_heads: int,
    observed: dict[str, int],
    head: int,
    strip: Strip,
    phone: bool = False,
    targets: list[str] | None = None,
) -> alt.VConcatChart:
    """Fig 11: rows ``targets`` (Q, K, V; or Q or K, V); columns epsilon (every one, or the
    unmodified run and the one chosen with ``eps``); below, KL per position for every cell,
    one panel per tensor, on the scales of ``strip``. ``phone``: one column for a phone's
    width, the tensor chosen with ``tensor``, a row per epsilon (``phone_grid``)."""
    targets = targets or list(TARGETS)
    labels = [epsilon_label(e) for e in epsilons]
    tips = [tip("target:N", "tensor scaled"), tip("eps:N", "scale factor")]
    columns = [UNMODIFIED, *labels]
    if phone:
        panel = heat_panel(len(tokens), tips, width=PHONE_WIDTH, hi=PHONE_WIDTH / 2)
        grid = phone_grid(panel, "eps:N", columns)
    else:
        grid = facet(
            heat_panel(len(tokens), tips),
            "grid",
            row=alt.Facet("target:N", sort=targets, title="tensor scaled"),
            column=alt.Facet("eps:N", sort=columns, title="scale factor"),
        )
    kl = alt.FacetChart(
        spec=kl_panel("eps:N", labels, tips, strip, "scale factor").properties(name="kl_panel"),
        facet=alt.Facet("target:N", sort=targets, title="tensor scaled"),
        columns=len(targets),  # wrapped, so that a narrow page puts them in fewer columns
        name="kl",
    )
    shown = ("tensor",) if phone else ()
    title = common.selection_title(
        "Attention after scaling Q, K or V", "colour: post-softmax weight", *shown, "head",
        "observation",
    )  # fmt: skip
    chart = (
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
    )
    if phone:
        chart = chart.transform_filter("datum.target == tensor").add_params(
            widgets.tensor_param(targets)
        )
    return chart.properties(title=title, usermeta=RELAYOUT)


# The grids' facets change with their controls (the scale factors shown, the tensor) and
# as rows arrive: the page draws them again each time (runtime.js, Chart.followDomains).
RELAYOUT = {"relayout": True}


PHONE_WIDTH = 240  # px: a map's width in a grid drawn for a phone (one map a row)


def phone_grid(
    panel: alt.Chart, field: str, sort: list[str] | alt.EncodingSortField
) -> alt.FacetChart:
    """The maps of one tensor in one column, one a row, each titled with its ``field``
    (a phone's layout: every map as wide as ``PHONE_WIDTH``, headers never side by side)."""
    return alt.FacetChart(
        spec=panel.properties(name="grid_panel"),
        facet=alt.Facet(
            field, sort=sort, title=None, header=alt.Header(labelLimit=PHONE_WIDTH + 40)
        ),
        columns=1,
        name="grid",
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
    strip: Strip,
    texts: dict[str, str] | None = None,
    targets: tuple[str, ...] = TARGETS,
    title: str = "Attention after replacing Q, K or V by its mean",
    phone: bool = False,
) -> alt.VConcatChart:
    """Fig 12: rows = inputs, columns the unmodified run and ``targets`` replaced by their
    mean; below, KL per position (panels wrapping after ``KL_COLUMNS``). ``texts``: each
    input's whole sentence by its index, for the tooltips (the row labels are cut short).
    ``phone``: one column for a phone's width, the tensor chosen with ``tensor``: per input
    its unmodified run, then its tensor replaced (``phone_grid``)."""
    tips = [
        tip("input_text:N", "input"),
        tip("target:N", "tensor replaced by its mean"),
    ]
    n = max((len(t) for t in tokens.values()), default=1)
    by_input = alt.EncodingSortField("sentence", op="min")
    if phone:
        panel = heat_panel(n, tips, fit=True, width=PHONE_WIDTH, hi=PHONE_WIDTH / 2)
        grid = phone_grid(panel, "cell:N", alt.EncodingSortField("cell_order", op="min"))
        grid = grid.resolve_scale(x="independent", y="independent")
    else:
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
        spec=kl_panel("target:N", list(targets), tips, strip, "tensor replaced").properties(
            name="kl_panel"
        ),
        facet=alt.Facet("input:N", sort=by_input, title="input", header=alt.Header(labelLimit=200)),
        columns=KL_COLUMNS,
        name="kl",
    )
    shown = ("tensor",) if phone else ()
    title = common.selection_title(
        title, "colour: post-softmax weight", *shown, "head", "observation"
    )
    token_expr = "sentence_tokens[datum.sentence] ? sentence_tokens[datum.sentence][datum.{}] : '#' + datum.{}"
    chart = (
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
    )
    if not phone:
        return chart.properties(title=title, usermeta=RELAYOUT)
    # the run first: a long input's text is cut at the header's end
    run = f"datum.target == '{UNMODIFIED}' ? 'unmodified' : datum.target + ' replaced'"
    return (
        chart.transform_filter(f"datum.target == '{UNMODIFIED}' || datum.target == tensor")
        .transform_calculate(
            cell=f"({run}) + ' \u2014 ' + datum.input",
            cell_order=f"2 * datum.sentence + (datum.target == '{UNMODIFIED}' ? 0 : 1)",
        )
        .add_params(widgets.tensor_param(list(targets)))
        .properties(title=title, usermeta=RELAYOUT)
    )
