"""Index figure: the share of sink heads per layer, by the literature's measure and by ours.

Gu et al. (ICLR 2025) count a head as a sink when the first token gets more than
``eps = 0.3`` of its attention on average (``first_prob``, pooled over the set); the
report's own first-token focus is argmax-based (a sink when the first token is the top
key for more than half of the queries, ``sinks.is_argmax_sink``). One line per measure,
percent of the layer's heads, so the layers where the two disagree stand out. A layer's
points name its strongest sink head (the highest first-token probability) and, on a click,
open the sentence page where that head's first-token probability is highest.
"""

from __future__ import annotations

import altair as alt

from attnreport.analyses import sinks
from attnreport.charts.figure import Columns, Figure
from attnreport.charts.figures.links import Pages, best_sentences, with_links
from attnreport.charts.spec.assemble import build_figure
from attnreport.charts.spec.common import layer_x, link_cursor, link_tips
from attnreport.charts.spec.other_blocks import axis_layers, layer_bands
from attnreport.results import Manifest, SetResults

KEY = "set-sink-rate"
MEASURES = (  # the legend's labels: short enough for a phone's width (the caption says more)
    f"mean first-token probability > {sinks.EPS:g} (Gu et al.)",
    "first token the top key for > half of its queries",
)


def sink_rate_rows(set_results: SetResults) -> Columns:
    """layer, measure, percent (of the layer's heads), sinks, heads, head (the layer's
    strongest sink head: the highest pooled first-token probability, the first on a tie):
    two rows per layer."""
    by_sentence = set_results.focus_by_sentence.arrays()
    first_prob = sinks.pooled_scores(by_sentence, "first_prob")
    by_probability = sinks.sink_rates(first_prob)
    focus = sinks.pooled_scores(by_sentence, "first_focus")
    names = ("layer", "measure", "percent", "sinks", "heads", "head")
    rows: dict[str, list] = {name: [] for name in names}
    for layer in sorted(by_probability.by_layer):
        heads = [h for (lay, h) in focus if lay == layer]
        strongest = max(heads, key=lambda h: (first_prob.get((layer, h), 0.0), -h), default=0)
        by_prob = sum(1 for s in by_probability.sinks if s[0] == layer)
        by_argmax = sum(1 for h in heads if sinks.is_argmax_sink(focus[(layer, h)]))
        for measure, count in zip(MEASURES, (by_prob, by_argmax), strict=True):
            rows["layer"].append(int(layer))
            rows["measure"].append(measure)
            rows["percent"].append(round(100.0 * count / len(heads), 6) if heads else 0.0)
            rows["sinks"].append(count)
            rows["heads"].append(len(heads))
            rows["head"].append(strongest)
    return rows


def sink_rate_chart(
    key: str, n_layers: int, bands: alt.Chart | None = None, rows: Columns | None = None
) -> alt.LayerChart:
    """Percent of sink heads against layer, one coloured line per measure; ``bands``
    (``common.window_bands``) shade the windowed layers; points of linked ``rows`` say so."""
    rows = rows or {}
    base = alt.Chart().encode(
        x=layer_x(n_layers),
        y=alt.Y("percent:Q", title="sink heads (% of the layer)", scale=alt.Scale(domain=[0, 100])),
        color=alt.Color(
            "measure:N",
            legend=alt.Legend(title="a head is a sink when", orient="bottom", labelLimit=330),
        ),
        # where both measures agree one line covers the other: a dash shows the one below
        strokeDash=alt.StrokeDash(
            "measure:N",
            scale=alt.Scale(domain=list(MEASURES), range=[[1, 0], [6, 3]]),
            legend=None,
        ),
        tooltip=[
            alt.Tooltip("layer:Q", title="layer"),
            alt.Tooltip("measure:N", title="sink when"),
            alt.Tooltip("sinks:Q", title="sink heads"),
            alt.Tooltip("heads:Q", title="heads"),
            alt.Tooltip("percent:Q", title="% of heads", format=".0f"),
            alt.Tooltip("head:Q", title="strongest sink head"),
            *link_tips(rows),
        ],
    )
    point = alt.OverlayMarkDef(size=28, **link_cursor(rows))
    lines = base.mark_line(point=point, strokeWidth=1.8)
    title = alt.TitleParams(
        text="Sink heads per layer, two measures",
        subtitle="pooled over the sentence set",
    )
    marks = [lines] if bands is None else [bands, lines]
    return alt.layer(*marks, data=alt.Data(name=key)).properties(title=title, width=520, height=240)


def sink_rate_figure(
    set_results: SetResults, manifest: Manifest, notes: str = "", pages: Pages = ()
) -> Figure:
    """The per-layer Sink_1^eps of Gu et al. beside the argmax-based count; a layer's
    points open the page of ``pages`` that shows its strongest sink head best."""
    rows = sink_rate_rows(set_results)
    rows = with_links(rows, best_sentences(set_results, "first_prob", pages), pages)
    n_layers = axis_layers(manifest, max(rows["layer"], default=0) + 1)
    caption = (
        "For every layer, the percentage of its heads that are attention sinks by two "
        "measures, pooled over the set. Gu et al. (ICLR 2025) call a head a sink when the "
        f"first token gets more than {sinks.EPS:g} of its attention on average over the "
        "queries that can see it (their Sink_1^eps with eps = 0.3); the report's own "
        f"measure is argmax-based: {sinks.ARGMAX_WORDS}. Where the lines part, a head either spreads a large share onto the first "
        "token without it winning most rows, or wins most rows with a small share."
    )
    if "href" in rows:
        caption += (
            " Click a point to open the layer's strongest sink head (the highest first-token "
            f"probability) on the sentence page, of the {len(pages)} with one, where that "
            "head's first-token probability is highest."
        )
    caption += notes
    return build_figure(
        key=KEY,
        title="Sink heads per layer",
        caption=caption,
        chart=sink_rate_chart(KEY, n_layers, layer_bands(manifest), rows),
        rows=rows,
    )
