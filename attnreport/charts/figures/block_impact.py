"""Figure 10 (impact by position) and the index page's pooled head impact.

- Fig 10: ``||block output|| / ||x||`` against token position, one line per layer;
  purple points mark tokens for which at least one head of that layer attends most to
  the first token (point size = the share of such heads); token 0, which can attend only
  to itself, is never marked. All rows inline, except for an
  input longer than ``POSITION_WINDOW`` tokens: it is drawn ``POSITION_WINDOW`` positions
  at a time (a slider steps through the windows), one data file per window, the first
  inline (every position of a 512-token input at once took about 1 s to draw).
- Index: mean ``||u||/||x||`` and ``cos(u, x)`` per (layer, head) over the whole set.
"""

from __future__ import annotations

import altair as alt
import numpy as np

from attnreport.charts.figure import Columns, Figure
from attnreport.charts.figures.columns import as_list, rounded, sentence_tokens, sort_rows
from attnreport.charts.figures.head_roles import link_caption, role_links
from attnreport.charts.figures.links import Pages
from attnreport.charts.spec import common, scales, widgets
from attnreport.charts.spec.assemble import build_figure
from attnreport.charts.spec.common import link_cursor, link_tips, tip
from attnreport.charts.spec.other_blocks import ordinal_layers
from attnreport.charts.spec.position_window import (
    WINDOW_PARAM,
    is_windowed,
    shown_positions,
    window_caption,
    window_chunks,
    window_filter,
)
from attnreport.charts.spec.theme import (
    FIRST_COLOR,
    LAYER_SCHEME,
    MAGNITUDE_SCHEME,
    ORIENTATION_SCHEME,
)
from attnreport.results import Manifest, SentenceResults, SetResults


def block_impact_chart(
    key: str, tokens: list[str], n_layers: int, n_heads: int, magnitude: list[float] | None = None
) -> alt.LayerChart:
    """Fig 10: block output norm ratio per token, one line per layer, first-token marks; the
    y scale is ``scales.ratio_scale`` of every ``magnitude`` drawn (log when they span
    decades: one layer's large ratios would flatten the others onto 0).

    Past ``POSITION_WINDOW`` tokens, only the window from the ``positions_from`` slider is
    drawn; the x axis then follows the window and the title names it."""
    n = len(tokens)
    x_axis = common.position_axis("token", n, angle=-60)
    y_scale = scales.ratio_scale(magnitude or [])
    y_title = "||attention block output|| / ||x||"
    if scales.scale_type(magnitude or []) != "linear":
        y_title += f" ({scales.scale_type(magnitude or [])} scale)"
    base = alt.Chart().encode(
        x=alt.X("query:O", **x_axis),
        y=alt.Y("magnitude:Q", title=y_title, scale=y_scale),
        tooltip=[
            tip("token:N", "token"),
            tip("query:O", "position"),
            tip("layer:O", "layer"),
            tip("magnitude:Q", "magnitude", ".3f"),
            tip("top_first_heads:Q", "heads attending most to the first token (0 at token 0)"),
        ],
    )
    # hovering a line brings its layer forward; with the pointer away every layer shows
    pick = alt.selection_point(name="pick", fields=["layer"], on="pointerover", clear="pointerout")
    lines = base.mark_line(strokeWidth=1.2).encode(
        color=alt.Color(
            "layer:Q",
            scale=alt.Scale(scheme=LAYER_SCHEME),
            legend=alt.Legend(title="layer", format="d"),
        ),
        detail="layer:O",
        opacity=alt.condition(pick, alt.value(0.85), alt.value(0.08)),
    )
    marks = (
        base.transform_filter("datum.top_first_heads > 0")
        .mark_point(filled=True, color=FIRST_COLOR)
        .encode(
            size=alt.Size(
                "share_first:Q",
                title="first-token heads (share)",
                scale=alt.Scale(domain=[0, 1], range=[4, 70]),
            ),
            opacity=alt.condition(pick, alt.value(0.75), alt.value(0.05)),
        )
    )
    # invisible points at every vertex carry the hover selection and the tooltips
    # ("nearest" does not work on lines, and its voronoi cells lose ordinal tooltip fields)
    hover = base.mark_point(opacity=0, size=70, filled=True).add_params(pick)
    subtitle = (
        "purple = some heads of that layer attend most to the first token; "
        "hover a point to single out its layer"
    )
    chart = alt.layer(lines, marks, hover, data=alt.Data(name=key))
    title = common.selection_title("Impact by position", subtitle, n_tokens=n)
    if is_windowed(n):
        chart = chart.transform_filter(window_filter()).add_params(*widgets.window_params(n))
    return (
        chart.transform_calculate(
            token="tokens[datum.query]", share_first=f"datum.top_first_heads / {max(n_heads, 1)}"
        )
        .add_params(widgets.tokens_param(tokens))
        .properties(
            title=title,
            width=alt.Step(common.cell_step(shown_positions(n), width=600, hi=28)),
            height=300,
        )
    )


def block_impact_figure(sentence: SentenceResults) -> Figure:
    """Fig 10: layers x tokens rows, inline (a long input: one window inline, the others
    in data files)."""
    n_layers, n_heads = common.n_layers_heads(sentence)
    block = sort_rows(sentence.tables.block_impact.arrays(), ("layer", "query"))
    rows: Columns = {name: as_list(block[name]) for name in ("layer", "query", "top_first_heads")}
    # token 0 can attend only to itself: every head's top target there is no choice
    rows["top_first_heads"] = [
        0 if q == 0 else h for q, h in zip(rows["query"], rows["top_first_heads"], strict=True)
    ]
    rows["magnitude"] = rounded(block["magnitude"])
    tokens = sentence_tokens(sentence)
    chart = block_impact_chart("impact-by-position", tokens, n_layers, n_heads, rows["magnitude"])
    caption = (
        "The change made by the whole attention block (all heads together) relative to the "
        "hidden state, for every token, one line per layer (dark = early, yellow = late). "
        "Purple points mark tokens for which heads of that layer attend most to the first "
        "token; larger points mean more such heads (token 0 is never marked: it can attend "
        "only to itself). Check whether those tokens get smaller updates."
    ) + scales.scale_words(rows["magnitude"])
    figure = {"key": "impact-by-position", "title": "Impact by position", "chart": chart}
    if not is_windowed(len(tokens)):
        return build_figure(caption=caption, rows=rows, **figure)
    caption += window_caption(len(tokens))
    chunks = window_chunks(rows, len(tokens))
    return build_figure(
        caption=caption, chunks=chunks, params=(WINDOW_PARAM,), default=(0,), **figure
    )


ROBUST_PERCENTILE = 98.0  # colour domains end here, so a few outliers cannot wash out the rest


def robust_limits(magnitude: np.ndarray, orientation: np.ndarray) -> tuple[float, float]:
    """(top of the magnitude domain, half-width of the orientation domain): the
    ``ROBUST_PERCENTILE``-th percentile of the magnitudes and of |orientation|, rounded up
    to 3 significant digits (at least 1e-3, so an all-zero table still has a domain)."""

    def upper(values: np.ndarray) -> float:
        finite = values[np.isfinite(values)]
        top = float(np.percentile(finite, ROBUST_PERCENTILE)) if len(finite) else 0.0
        return float(f"{max(top, 1e-3):.3g}")

    return upper(np.abs(magnitude)), upper(np.abs(orientation))


def magnitude_colour(magnitude: np.ndarray, top: float) -> tuple[alt.Scale, list[str]]:
    """The colour scale and legend title of the heads' mean update magnitudes: over their
    whole range on a log scale when they span more than ``scales.DECADES`` decades (one
    colour would otherwise hold most layers), else sequential on [0, ``top``], clamped."""
    kind = scales.scale_type(magnitude)
    if kind == "linear":
        domain = [0, top]
        return alt.Scale(scheme=MAGNITUDE_SCHEME, domain=domain, clamp=True), [
            "mean ||u||/||x||",
            f"0 to {top:g} and above",
        ]
    finite = magnitude[np.isfinite(magnitude)]
    low = float(f"{finite[finite > 0].min():.2g}") if kind == "log" else 0.0
    domain = [low, float(f"{finite.max():.3g}")]
    scale = scales.ratio_scale(finite, scheme=MAGNITUDE_SCHEME, domain=domain, clamp=True)
    return scale, ["mean ||u||/||x||", f"{kind} scale, {domain[0]:g} to {domain[1]:g}"]


def pooled_impact_chart(
    key: str,
    limits: tuple[float, float] = (1.0, 1.0),
    manifest: Manifest | None = None,
    rows: Columns | None = None,
) -> alt.ConcatChart:
    """Index: mean magnitude and mean orientation per (layer, head) over the set, as heatmaps;
    ``limits`` from ``robust_limits``: magnitude sequential on [0, limits[0]] (or on a log
    scale over the ``rows``' magnitudes when they span decades: ``magnitude_colour``),
    orientation diverging on [-limits[1], limits[1]] centred at 0 (cos = 0: orthogonal),
    both clamped."""
    top, half = limits
    values = np.asarray((rows or {}).get("magnitude", [top]), float)
    colour, legend = magnitude_colour(values, top)
    base = alt.Chart().encode(
        x=alt.X("head:O", title="head"),
        y=alt.Y("layer:O", title="layer", sort="descending", **ordinal_layers(manifest, True)),
        tooltip=[
            tip("layer:O", "layer"),
            tip("head:O", "head"),
            tip("magnitude:Q", "mean ||u||/||x||", ".3f"),
            tip("orientation:Q", "mean cos(u, x)", ".3f"),
            tip("n_tokens:Q", "tokens"),
            *link_tips(rows or {}),
        ],
    )
    magnitude = (
        base.mark_rect(**link_cursor(rows or {}))
        .encode(
            color=alt.Color(
                "magnitude:Q",
                scale=colour,
                legend=alt.Legend(title=legend),
            )
        )
        .properties(title="update magnitude", width=alt.Step(18), height=alt.Step(12))
    )
    orientation = (
        base.mark_rect(**link_cursor(rows or {}))
        .encode(
            color=alt.Color(
                "orientation:Q",
                legend=alt.Legend(title=["mean cos(u, x)", f"\u00b1{half:g}; 0 = orthogonal"]),
                scale=alt.Scale(
                    scheme=ORIENTATION_SCHEME, domain=[-half, half], domainMid=0, clamp=True
                ),
            )
        )
        .properties(title="update orientation", width=alt.Step(18), height=alt.Step(12))
    )
    kind = scales.scale_type(values)
    ends = "colours end" if kind == "linear" else "orientation colours end"
    subtitle = f"mean over every token; {ends} at the {ROBUST_PERCENTILE:g}th percentile"
    if kind != "linear":
        subtitle += f"; magnitude on a {kind} scale"
    title = alt.TitleParams(text="Head impact over the sentence set", subtitle=subtitle)
    # two columns that wrap (``runtime_layout``): one under the other on a phone, where side
    # by side their cells would shrink until the head numbers ran into each other
    return (
        alt.concat(magnitude, orientation, columns=2, data=alt.Data(name=key))
        .resolve_scale(color="independent")
        .properties(title=title)
    )


def pooled_impact_figure(
    set_results: SetResults, manifest: Manifest | None = None, pages: Pages = ()
) -> Figure:
    """The index page's head impact figure (all rows inline: layers x heads), each head
    linked to the page of ``pages`` that shows its role best (as in the head atlas)."""

    pooled = sort_rows(set_results.impact_pooled.arrays(), ("layer", "head"))
    rows: Columns = {name: as_list(pooled[name]) for name in ("layer", "head", "n_tokens")}
    for name in ("magnitude", "orientation"):
        rows[name] = rounded(pooled[name])
    rows = role_links(set_results, rows, pages)
    logged = scales.scale_type(pooled["magnitude"]) != "linear"
    ends = (
        f"The magnitudes span {scales.decades(pooled['magnitude']):.1f} powers of ten, so "
        "their colours follow a log scale over their whole range; the orientation's colours "
        if logged
        else "Both colour scales "
    )
    caption = (
        "For every layer (rows) and head (columns), the mean over all tokens of the set of "
        "how strongly the head changes the hidden state (left) and of the direction of the "
        "change (right: blue cancels part of the hidden state, orange adds along it, white is "
        f"orthogonal). {ends}end at the {ROBUST_PERCENTILE:g}th percentile of the heads' "
        "values (values beyond it take the end colour), so a few outliers do not wash out the "
        "rest. Look for heads that write large updates and for layers where updates turn "
        "negative."
    ) + link_caption(rows, pages)
    key = "set-head-impact"
    return build_figure(
        key=key,
        title="Head impact over the sentence set",
        caption=caption,
        chart=pooled_impact_chart(
            key, robust_limits(pooled["magnitude"], pooled["orientation"]), manifest, rows
        ),
        rows=rows,
    )
