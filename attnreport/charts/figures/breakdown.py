"""Figures 2 and 3: the additive terms of the score s_ij, for the target of a chosen rank.

Input is one sentence's ``breakdown`` table and the manifest (for the positional
scheme). Both figures are chunked per layer: a layer holds heads x tokens x ranks rows
(9 x 60 x 3 = 1620); an input past ``POSITION_WINDOW`` tokens per (layer, head). Fig 3 draws a subset of the same rows, so it has no chunk files of
its own: it reads Fig 2's (``Figure.chunk_source``), and a layer loaded for one is there
for the other. Absolute-position models have no position term: it is left out of the
charts and the captions say so.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import altair as alt
import numpy as np

from attnreport.charts.figure import Columns, Figure
from attnreport.charts.figures.columns import (
    SCORE_DECIMALS,
    as_list,
    rounded,
    select,
    sentence_tokens,
)
from attnreport.charts.spec import common, widgets
from attnreport.charts.spec.assemble import build_figure
from attnreport.charts.spec.common import tip, token_calcs
from attnreport.charts.spec.other_blocks import attention_layers
from attnreport.charts.spec.position_window import (
    is_windowed,
    shown_positions,
    window_caption,
    window_filter,
)
from attnreport.charts.spec.theme import TERM_COLORS, TERM_LABELS
from attnreport.results import Manifest, SentenceResults
from attnreport.results.pooling import pooled_caption
from attnreport.vocabulary import TERMS

ROW_FILTER = "datum.layer == layer && datum.head == head && datum.rank == sort_idx"


def breakdown_rows(
    sentence: SentenceResults, terms: tuple[str, ...], per_head: bool = False
) -> dict[tuple[int, ...], Columns]:
    """(layer,) -> breakdown rows of that layer: layer, head, query, rank, key, score, terms;
    with ``per_head``, (layer, head) -> the rows of that head."""
    bd = sentence.tables.breakdown.arrays()
    out: dict[tuple[int, ...], Columns] = {}
    for layer in sorted(set(bd["layer"].tolist())):
        in_layer = select(bd, bd["layer"] == layer)
        heads = sorted(set(in_layer["head"].tolist())) if per_head else [None]
        for head in heads:
            rows = in_layer if head is None else select(in_layer, in_layer["head"] == head)
            cols = {name: as_list(rows[name]) for name in ("layer", "head", "query", "rank", "key")}
            for name in ("score", *terms):
                cols[name] = rounded(rows[name], SCORE_DECIMALS)
            out[(int(layer),) if head is None else (int(layer), int(head))] = cols
    return out


def chunking(sentence: SentenceResults, terms: tuple[str, ...], default: tuple[int, int]):
    """(chunks, their params, the inlined chunk) of Figs 2 and 3: one data file per layer,
    or, for an input past ``POSITION_WINDOW`` tokens, per (layer, head): a whole layer of a
    long input is too much to inline (9 heads x 5,000 tokens x 3 ranks is about 1.5 MB,
    past the page's 1 MB before its first draw), one head is a ninth of it."""
    if is_windowed(sentence.n_tokens):
        return breakdown_rows(sentence, terms, per_head=True), ("layer", "head"), default
    return breakdown_rows(sentence, terms), ("layer",), (default[0],)


def _breakdown_tooltips(terms: tuple[str, ...]) -> list[alt.Tooltip]:
    return [
        tip("query_token:N", "current token"),
        tip("key_token:N", "target token"),
        tip("rank:O", "rank in row (0 = top)"),
        tip("score:Q", "score s_ij", ".3f"),
        *[tip(f"{t}:Q", TERM_LABELS[t], ".3f") for t in terms],
        tip("layer:O", "layer"),
        tip("head:O", "head"),
    ]


def _row_filter(n_tokens: int) -> str:
    """The rows drawn: the chosen layer, head and rank (and window, for a long input)."""
    if not is_windowed(n_tokens):
        return ROW_FILTER
    return f"{ROW_FILTER} && {window_filter()}"


def _params(s: Setup) -> list:
    return [
        widgets.tokens_param(s.tokens),
        widgets.layer_param(s.n_layers, s.default[0], list(s.layers) or None),
        widgets.head_param(s.n_heads, s.default[1]),
        widgets.sort_idx_param(s.n_ranks),
        *widgets.window_params(len(s.tokens)),
    ]


def _breakdown_layers(key: str, n: int, terms: tuple[str, ...]) -> alt.LayerChart:
    """Stacked (diverging) term bars plus a tick at the total score, for Fig 2."""
    labels = [TERM_LABELS[t] for t in terms]
    base = alt.Chart().encode(
        x=alt.X("query:O", **common.position_axis("current token", n, angle=-60))
    )
    bars = base.mark_bar().encode(
        y=alt.Y("value:Q", stack="zero", title="contribution to the score s_ij"),
        color=alt.Color(
            "term_label:N",
            title="term",
            scale=alt.Scale(domain=labels, range=[TERM_COLORS[t] for t in terms]),
        ),
        order=alt.Order("term_order:Q"),
        tooltip=[
            tip("term_label:N", "term"),
            tip("value:Q", "value", ".3f"),
            *_breakdown_tooltips(terms),
        ],
    )
    total = (
        base.transform_filter(f"datum.term == '{terms[0]}'")
        .mark_tick(color="black", thickness=2)
        .encode(y=alt.Y("score:Q"), tooltip=_breakdown_tooltips(terms))
    )
    return alt.layer(bars, total, data=alt.Data(name=key))


def breakdown_chart(key: str, s: Setup, terms: tuple[str, ...]) -> alt.LayerChart:
    """Fig 2: per current token, the terms of s_ij for its target of rank ``sort_idx``."""
    tokens = s.tokens
    label_map = "{" + ", ".join(f"'{t}': '{TERM_LABELS[t]}'" for t in terms) + "}"
    order_map = "{" + ", ".join(f"'{t}': {i}" for i, t in enumerate(terms)) + "}"
    n = len(tokens)
    title = common.selection_title(
        "Attention breakdown",
        "the additive terms of s_ij; black tick = total score",
        "layer",
        "head",
        "sort_idx",
        n_tokens=n,
    )
    return (
        _breakdown_layers(key, n, terms)
        .transform_filter(_row_filter(n))
        .transform_calculate(**token_calcs(query_token="datum.query", key_token="datum.key"))
        .transform_fold(list(terms), as_=["term", "value"])
        .transform_calculate(
            term_label=f"{label_map}[datum.term]", term_order=f"{order_map}[datum.term]"
        )
        .add_params(*_params(s))
        .properties(title=title, width=alt.Step(common.cell_step(shown_positions(n))), height=260)
    )


def bias_position_chart(key: str, s: Setup, terms: tuple[str, ...]) -> alt.Chart:
    """Fig 3: the bias term and the position term against the current token (lines)."""
    tokens = s.tokens
    labels = [TERM_LABELS[t] for t in terms]
    label_map = "{" + ", ".join(f"'{t}': '{TERM_LABELS[t]}'" for t in terms) + "}"
    names = {("bias", "position"): "Bias vs position", ("position",): "Position term"}
    text = names.get(terms, "Bias term")
    n = len(tokens)
    title = common.selection_title(
        text, "for the target of the chosen rank", "layer", "head", "sort_idx", n_tokens=n
    )
    return (
        alt.Chart(alt.Data(name=key))
        .transform_filter(_row_filter(n))
        .transform_calculate(**token_calcs(query_token="datum.query", key_token="datum.key"))
        .transform_fold(list(terms), as_=["term", "value"])
        .transform_calculate(term_label=f"{label_map}[datum.term]")
        .mark_line(point=True)
        .encode(
            x=alt.X("query:O", **common.position_axis("current token", n, angle=-60)),
            y=alt.Y("value:Q", title="term value"),
            color=alt.Color(
                "term_label:N",
                title="term",
                scale=alt.Scale(domain=labels, range=[TERM_COLORS[t] for t in terms]),
            ),
            tooltip=[
                tip("term_label:N", "term"),
                tip("value:Q", "value", ".3f"),
                *_breakdown_tooltips(terms),
            ],
        )
        .add_params(*_params(s))
        .properties(title=title, width=alt.Step(common.cell_step(shown_positions(n))), height=220)
    )


def _n_ranks(sentence: SentenceResults) -> int:
    ranks = sentence.tables.breakdown.arrays()["rank"]
    return int(np.max(ranks)) + 1 if len(ranks) else 1


@dataclass(frozen=True)
class Setup:
    """Shared inputs of Figs 2 and 3: tokens, sizes, default (layer, head), terms drawn."""

    tokens: list[str]
    n_layers: int
    n_heads: int
    n_ranks: int
    default: tuple[int, int]
    terms: tuple[str, ...]
    layers: tuple[int, ...] = ()  # the attention layers (a hybrid's are not 0..n-1)


def _setup(sentence: SentenceResults, manifest: Manifest) -> Setup:
    n_layers, n_heads = common.n_layers_heads(sentence)
    with_position = common.has_position_term(manifest, sentence.tables.breakdown.arrays())
    return Setup(
        tokens=sentence_tokens(sentence),
        n_layers=n_layers,
        n_heads=n_heads,
        n_ranks=_n_ranks(sentence),
        default=common.default_head(sentence),
        terms=TERMS if with_position else TERMS[1:],
        layers=tuple(attention_layers(sentence)),
    )


def _position_note(manifest: Manifest, with_position: bool) -> str:
    scheme = common.positional_scheme(manifest)
    if not with_position:
        return (
            "This model adds absolute position embeddings to its input, so the score has no "
            "separate position term: position acts through the content term."
        )
    if scheme == "alibi":
        return "Position is the ALiBi bias, a linear penalty on the distance to the target."
    return "Position is the score with the rotary (RoPE) rotation minus the score without it."


def breakdown_figure(
    sentence: SentenceResults, manifest: Manifest, key: str = "attention-breakdown", notes: str = ""
) -> Figure:
    """Fig 2 as a Figure, chunked per layer; ``notes``: its entry's caption sentences."""
    s = _setup(sentence, manifest)
    chart = breakdown_chart(key, s, s.terms)
    caption = (
        "For each current token, one target (the menu says which: the highest-scoring by "
        "default) and the additive terms that make up its score s_ij; the black tick is "
        "their sum. "
        + _position_note(manifest, "position" in s.terms)
        + " Bias depends only on the target; content depends on both tokens. The query-only "
        "term shifts a whole row by the same amount, so it has no effect after softmax."
        + notes
        + window_caption(len(s.tokens))
        + pooled_caption(sentence.tables.breakdown, "each bar")
    )
    chunks, params, default = chunking(sentence, s.terms, s.default)
    return build_figure(
        key=key,
        title="Attention breakdown",
        caption=caption,
        chart=chart,
        chunks=chunks,
        params=params,
        default=default,
    )


def bias_position_figure(
    sentence: SentenceResults,
    manifest: Manifest,
    key: str = "bias-vs-position",
    source: str = "attention-breakdown",
) -> Figure:
    """Fig 3 as a Figure, chunked per layer, reading the chunk files of Fig 2 (key ``source``,
    on the same page); only its default layer is inlined, with the columns it draws."""
    s = _setup(sentence, manifest)
    terms = tuple(t for t in ("bias", "position") if t in s.terms)
    note = zero_bias_note(sentence.tables.breakdown.arrays(), "qk_norm" in manifest.model.features)
    if note and "position" in terms:
        terms = ("position",)  # a line at 0 shows nothing: the note says it instead
    chart = bias_position_chart(key, s, terms)
    with_position = "position" in terms
    caption = (
        (
            "The bias term and the position term of the same targets as in the attention breakdown, against the "
            "current token. Adding the same value to every target of a row changes nothing after "
            "softmax, so look at how each term differs between targets and along the sentence, "
            "not at its level."
            if with_position
            else "The bias term of the same targets as in the attention breakdown, against the current token. "
            + _position_note(manifest, False)
            + " Only the trend matters: a shift shared by a whole row changes nothing after softmax."
        )
        + window_caption(len(s.tokens))
        + pooled_caption(sentence.tables.breakdown, "each point")
    )
    title = "Bias vs position" if with_position else "Bias term (no position term)"
    if note and terms == ("position",):
        title = "Position term"
        caption = (
            "The position term of the same targets as in the attention breakdown, against "
            "the current token. Adding the same value to every target of a row changes "
            "nothing after softmax, so look at how it differs between targets and along the "
            f"sentence, not at its level. {note} The chart leaves it out."
            + window_caption(len(s.tokens))
            + pooled_caption(sentence.tables.breakdown, "each point")
        )
    elif note:  # said once, in the caption: the reader looks there
        caption = f"{note} {caption}"
    chunks, params, default = chunking(sentence, terms, s.default)
    fig = build_figure(
        key=key,
        title=title,
        caption=caption,
        chart=chart,
        chunks=chunks,
        params=params,
        default=default,
        chunk_source=source,
    )
    return replace(fig, note=note)


def zero_bias_note(breakdown: dict[str, np.ndarray], qk_norm: bool = False) -> str:
    """One sentence when the bias term is exactly 0 in every row (every layer, head, token
    and rank), a chart of which would be a flat line, with the reason: the model's query
    and key projections have no bias, or (``qk_norm``) q and k are taken after the model's
    QK-norm, where no bias can be split off, so whatever a bias adds stays in the content
    term; else ""."""
    bias = breakdown["bias"]
    if not len(bias) or np.any(bias != 0):
        return ""
    if qk_norm:
        return (
            "The bias term is 0 at every layer, head and token: q and k are taken after the "
            "model's QK-norm, where no projection bias can be split off, so the content term "
            "holds whatever a bias adds."
        )
    return (
        "The bias term is 0 at every layer, head and token: this model's query and key "
        "projections have no bias, so no part of a score depends on the target alone."
    )
