"""Figure 1: the attention map of one head (pre-softmax scores, top target marked).

Input is one sentence's results (``sentences/NNN.json`` as loaded). The figure is
chunked per (layer, head): a 60-token head has 1830 cells.

The rows carry only what cannot be derived: ``query``, ``key`` and ``score`` (plus the
constant ``layer`` and ``head``). The spec computes the rest in the browser
(``DERIVED_TRANSFORMS``): ``prob`` = softmax of the row's scores and ``rank`` = the key's
place when the row is sorted by score descending, ties to the lower key (the schema's
rule). Scores are sent at ``SCORE_DECIMALS`` places, which keeps the probabilities within
about 3e-4 of the results' (2.4e-4 on the example): the tooltip shows them to 3 decimals
(``PROB_FORMAT``), where 4 would be wrong in the last digit for about 1 cell in 9 of the
example and 3 for about 1 in 80. Where that rounding ties cells of a row in an order other
than the results' ranks, those cells keep the results' digits (``ordered_scores``).
"""

from __future__ import annotations

from dataclasses import replace

import altair as alt
import numpy as np

from attnreport.charts.figure import Columns, Figure
from attnreport.charts.figures.columns import (
    SCORE_DECIMALS,
    rounded,
    sentence_tokens,
)
from attnreport.charts.spec import common, widgets
from attnreport.charts.spec.assemble import build_figure
from attnreport.charts.spec.common import tip, token_axis, token_calcs
from attnreport.charts.spec.other_blocks import attention_layers
from attnreport.charts.spec.theme import kind_expr, kind_scale, relative_score_scale
from attnreport.results import Manifest, SentenceResults, map_parts
from attnreport.results.maps import flat, row_ranks, triangle_index

ROW_FILTER = "datum.layer == layer && datum.head == head"
PROB_FORMAT = ".3f"  # the digits the probabilities derived from 3-decimal scores carry
NO_SINK = -1e9  # the sink logit of a layer without sinks in a model with them: exp() is 0
DOT_SIZE = "0.4 * pow(bandwidth('x'), 2)"  # a top-target dot, px²: 0.4 of its cell's area
DOT_STROKE = "min(0.8, bandwidth('x') / 8)"  # its white ring, px: thin on a tiny cell
# The runtime may shrink this map's cells to any size so that it fits its column (a long
# input's map is read as a pattern, its tooltips naming each cell; its labels thin out
# and keep their size), instead of scaling the drawing and its text down.
FILL = {"fit": "fill"}


def ordered_scores(
    query: np.ndarray, key: np.ndarray, scores: np.ndarray, ranks: np.ndarray
) -> list[float]:
    """One head's scores at ``SCORE_DECIMALS`` places, except where rounding ties cells of
    a row whose ranks (``ranks``, the results') then come out in another order: those tied
    cells keep every digit of ``scores``, so that ``row_ranks`` of the values sent gives
    back ``ranks`` (unless the results' own scores tie too: about 1 row in 3000)."""
    shown = rounded(scores, SCORE_DECIMALS)
    values = np.asarray(shown)
    wrong = np.unique(query[row_ranks(query, key, values) != ranks])
    if not len(wrong):
        return shown
    order = np.lexsort((key, -values, query))
    same = (query[order][1:] == query[order][:-1]) & (values[order][1:] == values[order][:-1])
    tied_sorted = np.zeros(len(order), dtype=bool)
    tied_sorted[1:] |= same
    tied_sorted[:-1] |= same
    tied = np.empty_like(tied_sorted)
    tied[order] = tied_sorted
    for index in np.flatnonzero(tied & np.isin(query, wrong)).tolist():
        shown[index] = float(scores[index])
    return shown


def attention_map_rows(sentence: SentenceResults) -> dict[tuple[int, int], Columns]:
    """(layer, head) -> rows layer, head, query, key, score of one head's triangle.

    Cells the model's mask blocks inside the causal triangle (a sliding window: their
    score is null in the results) are left out, so the map shows them empty and the
    derived softmax runs over the keys the model could attend to. A model with sink
    logits (gpt-oss) gets a ``sink`` column too: the head's sink logit, which the derived
    softmax counts (``derive_prob_rank``).
    """
    att = sentence.attention
    if att is None:
        raise ValueError(f"sentence {sentence.index} has no attention maps (map_tokens)")
    all_query, all_key, _ = triangle_index(sentence.n_tokens)
    out = {}
    for index, (layer, heads) in enumerate(zip(att.layer_numbers, att.scores, strict=True)):
        sinks = None if att.sinks is None else att.sinks[index]
        for head in range(len(heads)):
            scores = flat(att.scores[index][head])
            keep = np.isfinite(scores)
            query, key = all_query[keep], all_key[keep]
            ranks = flat(att.ranks[index][head])[keep].astype(int)
            out[(layer, head)] = {
                "layer": [layer] * len(query),
                "head": [head] * len(query),
                "query": query.tolist(),
                "key": key.tolist(),
                "score": ordered_scores(query, key, scores[keep], ranks),
            }
            if att.sinks is not None:  # a layer without one: a sink that takes nothing
                sink = np.asarray(NO_SINK if sinks is None else sinks[head], np.float64)
                per_row = np.broadcast_to(sink, (sentence.n_tokens,))  # one per query (Inkling 2)
                out[(layer, head)]["sink"] = per_row[query].tolist()
    return out


def derive_prob_rank(chart: alt.LayerChart, sinks: bool = False) -> alt.LayerChart:
    """Add ``prob`` (softmax of the row's scores) and ``rank`` (0 = highest score, ties to
    the lower key) to rows already filtered to one head. With ``sinks`` the rows carry
    the head's sink logit (``sink``), which takes its share of the softmax as the model
    computes it: p_ij = exp(s_ij) / (sum_k exp(s_ik) + exp(sink))."""
    total = "(datum.row_sum + exp(datum.sink - datum.row_max))" if sinks else "datum.row_sum"
    return (
        chart.transform_joinaggregate(row_max="max(score)", groupby=["query"])
        .transform_calculate(weight="exp(datum.score - datum.row_max)")
        .transform_joinaggregate(row_sum="sum(weight)", groupby=["query"])
        .transform_calculate(prob=f"datum.weight / {total}")
        .transform_window(
            window=[alt.WindowFieldDef(op="row_number", **{"as": "row_number"})],
            sort=[alt.SortField("score", order="descending"), alt.SortField("key")],
            groupby=["query"],
        )
        .transform_calculate(rank="datum.row_number - 1")
    )


def _map_tooltips() -> list[alt.Tooltip]:
    return [
        *common.token_tips(),
        tip("score:Q", "score s_ij", ".3f"),
        tip("prob:Q", "probability p_ij", PROB_FORMAT),
        tip("rank:O", "rank in row (0 = top)"),
        tip("query:O", "current position"),
        tip("key:O", "target position"),
        tip("layer:O", "layer"),
        tip("head:O", "head"),
    ]


def attention_map_chart(
    key: str,
    tokens: list[str],
    n_layers: int,
    n_heads: int,
    default: tuple[int, int],
    sinks: bool = False,
    layers: list[int] | None = None,
) -> alt.LayerChart:
    """Fig 1: heatmap of s_ij (rows = current token, columns = target), top target marked;
    ``sinks``: the rows carry sink logits (see ``derive_prob_rank``); ``layers``: the
    attention layers the slider offers (``widgets.layer_param``)."""
    n = len(tokens)
    step = common.cell_step(n)
    base = alt.Chart().encode(
        x=alt.X("key:O", **token_axis("target token (key)", n, angle=-60)),
        y=alt.Y("query:O", **token_axis("current token (query)", n)),
        tooltip=_map_tooltips(),
    )
    heat = base.mark_rect().encode(
        color=alt.Color(
            "relative:Q",
            scale=relative_score_scale(),
            legend=alt.Legend(title="s_ij \u2212 row max"),
        )
    )
    top = (
        base.transform_filter("datum.rank == 0")
        .transform_calculate(top_target=kind_expr("datum.query", "datum.key"))
        .mark_point(
            filled=True,
            shape="circle",
            size=alt.expr(DOT_SIZE),  # drawn smaller, the map's dots stay in their cells
            stroke="white",
            strokeWidth=alt.expr(DOT_STROKE),
            opacity=1,
        )
        .encode(
            color=alt.Color(
                "top_target:N", scale=kind_scale(), legend=alt.Legend(title="top target of the row")
            )
        )
    )
    title = common.selection_title(
        "Attention map", "pre-softmax scores relative to each row's top target", "layer", "head"
    )
    chart = alt.layer(heat, top, data=alt.Data(name=key)).transform_filter(ROW_FILTER)
    return (
        derive_prob_rank(chart, sinks)
        .transform_calculate(relative="datum.score - datum.row_max")
        .transform_calculate(**token_calcs(query_token="datum.query", key_token="datum.key"))
        .resolve_scale(color="independent")
        .add_params(
            widgets.tokens_param(tokens),
            widgets.layer_param(n_layers, default[0], layers),
            widgets.head_param(n_heads, default[1]),
        )
        .properties(title=title, width=alt.Step(step), height=alt.Step(step), usermeta=FILL)
    )


def layer_chunks(
    per_head: dict[tuple[int, int], Columns], first: tuple[int, int]
) -> dict[tuple[int], Columns]:
    """(layer,) -> rows of every head of that layer, one head after the other, leaving out
    the ``first`` (layer, head): the page inlines it, so its file must not repeat it."""
    out: dict[tuple[int], Columns] = {}
    for (layer, head), rows in per_head.items():
        chunk = out.setdefault((layer,), {name: [] for name in rows})
        if (layer, head) == first:
            continue
        for name, values in rows.items():
            chunk[name].extend(values)
    return out


def attention_map_figure(
    sentence: SentenceResults,
    key: str = "attention-map",
    manifest: Manifest | None = None,
    notes: str = "",
) -> Figure:
    """Fig 1 as a Figure, one data file per layer (all its heads), opening on
    ``common.default_head``: that head's rows are inlined, the rest of its layer loads
    after the first draw."""
    n_layers, n_heads = common.n_layers_heads(sentence)
    default = common.default_head(sentence)
    sinks = sentence.attention is not None and sentence.attention.sinks is not None
    tokens = sentence_tokens(sentence)
    layers = attention_layers(sentence)
    chart = attention_map_chart(key, tokens, n_layers, n_heads, default, sinks, layers)
    per_head = attention_map_rows(sentence)
    caption = (
        "Each row is a current token and each column a target token it can attend to (only "
        "earlier tokens and itself); colour is the pre-softmax score s_ij of the chosen layer "
        "and head relative to its row's highest, s_ij \u2212 max_j s_ij: scores compare only "
        "within a row (softmax ignores a shift shared by the row), so 0, the darkest, is the "
        "row's top target and \u22128 or less, white, is a target with at most e\u207b\u2078 of "
        "its weight. The dot marks each row's highest-scoring target: green when a token attends "
        "most to itself, purple when it attends most to the first token; row 0, the first "
        "token, can attend only to itself, so its dot is pale grey and counted as neither. "
        "Look for columns of "
        "purple dots (a first-token sink) and green diagonals. Hover a cell for both tokens, "
        "the score, the probability and the rank in the row."
    ) + notes
    figure = build_figure(
        key=key,
        title="Attention map",
        caption=caption,
        chart=chart,
        chunks=layer_chunks(per_head, default),
        params=("layer",),
        default=(default[0],),
        first_rows=per_head[default],
    )
    return figure if sentence.parts is None else drawn_from_parts(figure, sentence)


def drawn_from_parts(figure: Figure, sentence: SentenceResults) -> Figure:
    """``figure`` drawing from the sentence's map parts (schema 10, ``results.map_parts``)
    instead of data files of its own: each layer's chunk is that layer's part file, which
    the site holds once, under ``results/``; the page inlines no rows (the default layer's
    part loads before the first draw). The chunks keep their rows for Python readers."""
    att = sentence.attention
    assert att is not None and sentence.parts is not None
    names = {
        str(layer): ident for layer, ident in zip(att.layer_numbers, sentence.parts, strict=True)
    }
    chunks = {
        ident: {
            name: column.tolist()  # Python values: a notebook's figure inlines them as JSON
            for name, column in map_parts.layer_rows(att, entry, sentence.n_tokens).items()
        }
        for entry, ident in enumerate(sentence.parts)
    }
    return replace(
        figure, inline={}, chunks=chunks, chunk_names=names, inline_chunk=None, results_chunks=True
    )
