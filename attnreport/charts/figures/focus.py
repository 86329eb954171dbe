"""Figures 4-6 (one sentence) and the index page's pooled versions: focus across layers.

Input is a ``focus_sorted`` table: for each statistic and layer the heads sorted by value,
``line`` = rank 0..H-1 (0 = highest), ``head`` = the real head id. Lines are drawn by
``line`` so they never cross; tooltips name the head. The set version adds the spread of
each head across sentences: a min..max band, and quartiles in the tooltip.
"""

from __future__ import annotations

import altair as alt
import numpy as np

from attnreport.charts.figure import Columns, Figure
from attnreport.charts.figures.columns import as_list, rounded, select
from attnreport.charts.figures.links import Pages, best_sentences, with_links
from attnreport.charts.spec.assemble import build_figure
from attnreport.charts.spec.common import (
    layer_x,
    link_cursor,
    link_tips,
    n_layers_heads,
    tip,
)
from attnreport.charts.spec.other_blocks import axis_layers, layer_bands
from attnreport.charts.spec.theme import lines_scheme
from attnreport.results import Manifest, SentenceResults, SetResults
from attnreport.vocabulary import FOCUS_NAMES, FOCUS_STATISTICS

STATISTICS = FOCUS_STATISTICS
AXES = {  # the value axis's title per statistic
    "self_focus": "fraction of tokens whose top target is the token itself",
    "first_focus": "fraction of tokens whose top target is the first token",
    "concentration": "mean of p_top1 - p_top2",
}
NAMES = {s: (FOCUS_NAMES[s].capitalize(), AXES[s]) for s in FOCUS_STATISTICS}
WHAT = {
    "self_focus": "how often a head's highest-scoring target is the current token itself",
    "first_focus": "how often a head's highest-scoring target is the first token",
    "concentration": (
        "how concentrated attention is: the highest minus the second-highest probability, "
        "averaged over tokens; near 1 the head looks at a single token"
    ),
}
QUARTILES = ("min", "q1", "median", "q3", "max")


def focus_rows(
    sorted_table: dict[str, np.ndarray], statistic: str, pooled: dict[str, np.ndarray] | None = None
) -> Columns:
    """Rows layer, line, head, value of one statistic (+ min, q1, median, q3, max if pooled)."""
    rows = select(sorted_table, sorted_table["statistic"] == statistic)
    out: Columns = {name: as_list(rows[name]) for name in ("layer", "line", "head")}
    out["value"] = rounded(rows["value"])
    if pooled is None:
        return out
    stat = select(pooled, pooled["statistic"] == statistic)
    lookup = {
        (int(la), int(h)): i
        for i, (la, h) in enumerate(zip(stat["layer"], stat["head"], strict=True))
    }
    where = [lookup[(la, h)] for la, h in zip(out["layer"], out["head"], strict=True)]
    for name in QUARTILES:
        out[name] = rounded(stat[name][where])
    return out


def _tooltips(statistic: str, pooled: bool) -> list[alt.Tooltip]:
    label = NAMES[statistic][0].lower()
    tips = [
        tip("layer:O", "layer"),
        tip("head:O", "head"),
        tip("line:O", "rank in layer (0 = top)"),
    ]
    tips.append(tip("value:Q", f"{label} (pooled)" if pooled else label, ".3f"))
    if pooled:
        titles = (
            "min over sentences",
            "first quartile",
            "median",
            "third quartile",
            "max over sentences",
        )
        tips += [tip(f"{q}:Q", t, ".3f") for q, t in zip(QUARTILES, titles, strict=True)]
    return tips


def focus_lines_chart(
    key: str,
    statistic: str,
    n_layers: int,
    pooled: bool = False,
    bands: alt.Chart | None = None,
    rows: Columns | None = None,
) -> alt.LayerChart:
    """One line per rank: ``value`` against layer, coloured dark (rank 0) to light;
    ``bands`` (``common.window_bands``) shade the windowed layers behind the lines; the
    points of ``rows`` linked to the sentence pages (``links``) say so."""
    rows = rows or {}
    name, axis_title = NAMES[statistic]
    base = alt.Chart().encode(
        x=layer_x(n_layers),
        color=alt.Color(
            "line:O",
            scale=alt.Scale(scheme=lines_scheme(statistic)),
            legend=alt.Legend(
                title="rank in layer (0 = top)",
                symbolLimit=12,
                symbolOpacity=1,
                symbolType="stroke",
            ),
        ),
        tooltip=_tooltips(statistic, pooled) + link_tips(rows),
    )
    # hovering a line singles out its rank (and its band); with the pointer away all show
    pick = alt.selection_point(name="pick", fields=["line"], on="pointerover", clear="pointerout")
    lines = (
        base.mark_line(point=alt.OverlayMarkDef(size=22, **link_cursor(rows)), strokeWidth=1.5)
        .encode(
            y=alt.Y("value:Q", title=axis_title, scale=alt.Scale(domain=[0, 1])),
            opacity=alt.condition(pick, alt.value(1.0), alt.value(0.15)),
        )
        .add_params(pick)
    )
    layers = [lines]
    if pooled:
        band = base.mark_area().encode(
            y=alt.Y("min:Q", title=axis_title),
            y2="max:Q",
            opacity=alt.condition(pick, alt.value(0.12), alt.value(0.02)),
        )
        layers.insert(0, band)
    if bands is not None:
        layers.insert(0, bands)
    subtitle = "lines join the heads of equal rank; hover one to single it out and name its heads"
    if pooled:
        subtitle += "; band = min..max over sentences"
    title = alt.TitleParams(
        text=name + (" over the sentence set" if pooled else ""), subtitle=subtitle
    )
    return alt.layer(*layers, data=alt.Data(name=key)).properties(
        title=title, width=520, height=260
    )


def _caption(statistic: str, pooled: bool, n_sentences: int = 0) -> str:
    what = WHAT[statistic]
    first = (
        f"For every layer, {what}, for each head."
        if not pooled
        else (
            f"As on the sentence pages, {what}, now over all {n_sentences} sentences: each "
            "point is a head's value pooled over every token of the set."
        )
    )
    spread = (
        " The band spans the lowest to the highest value of that head across sentences; "
        "hover for the quartiles."
        if pooled
        else ""
    )
    return (
        f"{first} At each layer the heads are sorted, so a line joins heads of equal rank "
        "rather than the same head, and lines never cross; the tooltip names the real "
        f"head. Look for the layers where the top lines rise or fall.{spread}"
    )


def focus_figure(
    sentence: SentenceResults, statistic: str, manifest: Manifest, notes: str = ""
) -> Figure:
    """Fig 4, 5 or 6 for one sentence (all rows inline: layers x heads)."""
    rows = focus_rows(sentence.tables.focus_sorted.arrays(), statistic)
    n_layers = axis_layers(manifest, n_layers_heads(sentence)[0])
    key = statistic.replace("_", "-")
    chart = focus_lines_chart(key, statistic, n_layers, bands=layer_bands(manifest))
    return build_figure(
        key=key,
        title=NAMES[statistic][0] + " across layers",
        caption=_caption(statistic, False) + notes,
        chart=chart,
        rows=rows,
    )


def pooled_focus_figure(
    set_results: SetResults,
    statistic: str,
    n_sentences: int,
    manifest: Manifest,
    notes: str = "",
    pages: Pages = (),
) -> Figure:
    """The index page's version: pooled over the set, with the spread across sentences;
    each head's point opens the page of ``pages`` where its ``statistic`` is highest."""
    sorted_table = set_results.focus_sorted.arrays()
    rows = focus_rows(sorted_table, statistic, pooled=set_results.focus_pooled.arrays())
    rows = with_links(rows, best_sentences(set_results, statistic, pages), pages)
    n_layers = int(np.max(sorted_table["layer"])) + 1 if len(sorted_table["layer"]) else 1
    key = "set-" + statistic.replace("_", "-")
    n_layers = axis_layers(manifest, n_layers)
    chart = focus_lines_chart(key, statistic, n_layers, True, layer_bands(manifest), rows)
    caption = _caption(statistic, True, n_sentences)
    if "href" in rows:
        caption += (
            f" Click a point to open the sentence page, of the {len(pages)} with one, where "
            f"that head's {FOCUS_NAMES[statistic]} is highest, at that head."
        )
    return build_figure(
        key=key,
        title=NAMES[statistic][0] + " over the sentence set",
        caption=caption + notes,
        chart=chart,
        rows=rows,
    )
