"""Figures 11 and 12: attention after scaling Q, K or V, and after replacing it by its mean.

Input is ``interventions.json`` as loaded. Every cell holds, for each observation
(``same`` = the intervened layer, ``next``, ``last``) and head, the post-softmax triangle
after the intervention, plus the KL divergence of the next-token distribution at every
position. Both figures have one data file per observation (every head); the default head of the
``same`` layer is inlined.
Below each grid a small chart draws the KL divergence per position for every cell.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from attnreport.charts.figure import Columns, Figure
from attnreport.charts.figures.columns import rounded, sentence_tokens
from attnreport.charts.figures.grid_blocks import (
    Blocks,
    block_kl,
    block_labels,
    block_shares,
    blocks_for,
    blocks_sentence,
)
from attnreport.charts.figures.grids import (
    OBSERVATIONS,
    TARGETS,
    epsilon_label,
    mean_chart,
    scaling_chart,
)
from attnreport.charts.spec.assemble import build_figure
from attnreport.jsontypes import Row
from attnreport.results import GridCell, Interventions, Manifest, SentenceResults
from attnreport.results.maps import flat, triangle_index
from attnreport.text import display_token


def cell_rows(cell: GridCell, head: int, observation: str, extra: Row) -> Columns:
    """Rows of one grid cell for one head and observation: query, key, prob, kl, + extras.

    Past ``grid_blocks.GRID_TOKENS`` observed positions, query and key are block indices,
    prob the block's share of attention and kl its mean (``grid_blocks``)."""
    triangle = cell.observations[observation][head]
    blocks = blocks_for(len(triangle))
    if cell.blocks is not None:  # kept as the blocks drawn (``results.observed_blocks``)
        blocks = Blocks(cell.blocks[1], cell.blocks[0])
        query, key, _ = triangle_index(len(triangle))
        query_list, key_list, prob = query.tolist(), key.tolist(), rounded(flat(triangle))
        kl = rounded(block_kl(cell.kl, blocks))
    elif blocks.blocked:
        query_list, key_list, probs = block_shares(triangle, blocks)
        kl = rounded(block_kl(cell.kl, blocks))
        prob = rounded(probs)
    else:
        query, key, _ = triangle_index(len(triangle))
        query_list, key_list, prob = query.tolist(), key.tolist(), rounded(flat(triangle))
        kl = rounded(cell.kl)
    count = len(query_list)
    rows: Columns = {"head": [head] * count, "observation": [observation] * count}
    rows.update({name: [value] * count for name, value in extra.items()})
    rows.update(query=query_list, key=key_list, prob=prob)
    rows["kl"] = [kl[q] if q < len(kl) else 0.0 for q in rows["query"]]
    return rows


def _observed(cell: GridCell) -> int:
    """Positions a cell's triangles cover (a long input: only its first ``map_tokens``)."""
    if cell.blocks is not None:
        return cell.blocks[1]
    return len(cell.observations["same"][0]) if cell.observations["same"] else 0


def _shown_tokens(tokens: list[str], cell: GridCell) -> tuple[list[str], str]:
    """The labels a grid draws for an input (block labels when blocked) and the caption
    sentence saying so."""
    blocks = blocks_for(_observed(cell))
    sentence = blocks_sentence(len(cell.kl), blocks)
    return (block_labels(tokens, blocks) if blocks.blocked else tokens), sentence


def concat_rows(parts: list[Columns]) -> Columns:
    """Rows of several tables with the same columns, one after the other."""
    return {name: [v for part in parts for v in part[name]] for name in parts[0]} if parts else {}


def grid_rows(
    cells: Sequence[GridCell], n_heads: int, label: Any
) -> dict[tuple[int, str], Columns]:
    """(head, observation) -> rows of every cell; ``label(cell)`` gives each cell's extra columns."""
    out = {}
    for head in range(n_heads):
        for observation in OBSERVATIONS:
            out[(head, observation)] = concat_rows(
                [cell_rows(c, head, observation, label(c)) for c in cells]
            )
    return out


def observation_chunks(
    per_head: dict[tuple[int, str], Columns], first: tuple[int, str]
) -> dict[tuple[str], Columns]:
    """(observation,) -> rows of every head, leaving out ``first`` (head, observation):
    the page inlines it, so its file must not repeat it."""
    out: dict[tuple[str], Columns] = {}
    for (head, observation), rows in per_head.items():
        chunk = out.setdefault((observation,), {name: [] for name in rows})
        if (head, observation) != first:
            for name, values in rows.items():
                chunk[name].extend(values)
    return out


def _tokens_of(index: int, known: Sequence[SentenceResults]) -> list[str] | None:
    """Display tokens of sentence ``index`` from its results (None when not among them)."""
    for sentence in known:
        if sentence.index == index:
            return sentence_tokens(sentence)
    return None


def _default_head(sentence: SentenceResults, interventions: Interventions, n_heads: int) -> int:
    """The head with the strongest first-token focus at the intervened layer (0 if unknown)."""
    focus = sentence.tables.focus.arrays()
    layer = interventions.layer
    best = [
        (-f, int(h))
        for la, h, f in zip(focus["layer"], focus["head"], focus["first_focus"], strict=True)
        if int(la) == layer and int(h) < n_heads
    ]
    return min(best)[1] if best else 0


def _unmodified(baseline: Any, cells: Sequence[GridCell]) -> list[GridCell]:
    """The unmodified run as one cell per tensor (its maps at \u03b5 = 1, KL 0), so the grid
    shows it beside the scaled ones."""
    if not cells:
        return []
    kl = [0.0] * len(cells[0].kl)
    return [GridCell(t, 1.0, baseline, kl, cells[0].blocks) for t in TARGETS]


def _n_heads(cells: Sequence[GridCell]) -> int:
    return len(cells[0].observations["same"]) if cells else 0


def scaling_figure(
    interventions: Interventions,
    sentence: SentenceResults,
    manifest: Manifest,
    sentences: Sequence[SentenceResults] | None = None,
) -> Figure:
    """Fig 11 as a Figure, one data file per observation.

    Token texts come from ``sentence`` or ``sentences`` (whichever is the scaled one);
    without them the tooltips show positions ("#3").
    """
    scaling = interventions.scaling
    epsilons = list(interventions.epsilons)
    order = {(t, e): i for i, (t, e) in enumerate((t, e) for t in TARGETS for e in epsilons)}
    cells = sorted(scaling.cells, key=lambda c: order.get((c.target, c.setting), len(order)))
    n_heads = _n_heads(cells)
    index = scaling.sentence
    n = len(cells[0].kl) if cells else 0
    tokens = _tokens_of(index, [sentence, *(sentences or [])])
    tokens = tokens or [f"#{i}" for i in range(n)]
    tokens, shown = _shown_tokens(tokens, cells[0]) if cells else (tokens, "")
    head = _default_head(sentence, interventions, n_heads)
    observed = dict(interventions.observed_layers)
    chart = scaling_chart("scaling-grid", tokens, epsilons, n_heads, observed, head)
    rows = grid_rows(
        [*_unmodified(scaling.baseline, cells), *cells],
        n_heads,
        lambda c: {"target": c.target, "eps": epsilon_label(c.setting)},
    )
    caption = (
        f"Layer {interventions.layer}: Q, K or V of every head is multiplied by a factor "
        "\u03b5 (columns; the first is the unmodified run) and attention is recomputed in a "
        "real forward pass; each cell is the post-softmax attention map of the chosen head. "
        "Q and K scaled by \u03b5 are one intervention: either multiplies every score by "
        "\u03b5 (s = \u03b5 q\u00b7k), so their rows agree, tempering the scores towards "
        "uniform causal attention. Scaling V leaves this layer's weights "
        "unchanged by construction: choose the next or the last layer to see its effect. "
        "Below, the KL divergence of the next-token distribution from the unmodified run at "
        "each position, one colour per \u03b5."
    ) + shown
    return _grid_figure("scaling-grid", "Scaling Q, K and V", caption, chart, rows, head)


def _input_label(index: int, manifest: Manifest) -> str:
    listed = {s.index: s.text for s in manifest.sentences}
    text = listed.get(index, "").strip()
    short = display_token(text[:28] + ("\u2026" if len(text) > 28 else "")) if text else ""
    return f"sentence {index}" + (f": {short}" if short else "")


def mean_figure(
    interventions: Interventions,
    sentence: SentenceResults,
    manifest: Manifest,
    sentences: Sequence[SentenceResults] | None = None,
) -> Figure:
    """Fig 12 as a Figure, one data file per observation.

    Token texts of the inputs come from ``sentence`` and ``sentences``; an input found in
    neither shows positions ("#3") in the tooltips.
    """
    mean = interventions.mean
    chosen = list(mean.sentences)
    place = {(i, t): k for k, (i, t) in enumerate((i, t) for i in chosen for t in TARGETS)}
    cells = sorted(mean.cells, key=lambda c: place.get((int(c.setting), c.target), len(place)))
    n_heads = _n_heads(cells)
    known = [sentence, *(sentences or [])]
    cell_of = {int(c.setting): c for c in cells}  # any of an input's cells: same positions
    tokens, shown = {}, []
    for i in chosen:
        t = _tokens_of(i, known)
        labels, sentence_text = _shown_tokens(t or [], cell_of[i]) if i in cell_of else (t, "")
        if t is not None:
            tokens[str(i)] = labels
        shown.append(sentence_text)
    head = _default_head(sentence, interventions, n_heads)
    observed = dict(interventions.observed_layers)
    texts = {str(s.index): display_token(s.text) for s in manifest.sentences if s.index in chosen}
    chart = mean_chart("mean-grid", tokens, n_heads, observed, head, texts)
    labels = {i: _input_label(i, manifest) for i in chosen}
    rows = grid_rows(
        cells,
        n_heads,
        lambda c: {
            "sentence": int(c.setting),
            "input": labels[int(c.setting)],
            "target": c.target,
        },
    )
    caption = (
        f"Layer {interventions.layer}: for each of {len(chosen)} inputs (rows), Q, K or V "
        "(columns) of every head is replaced by its mean over the token positions and "
        "attention is recomputed; each cell is the post-softmax attention map of the chosen "
        "head. With Q replaced, every current token scores the targets alike; with K "
        "replaced, every target gets the same score, so attention is uniform; replacing V "
        "leaves this layer's weights unchanged, so observe the next or last layer. Below, "
        "the KL divergence of the next-token distribution per position."
    ) + "".join(dict.fromkeys(shown))
    return _grid_figure(
        "mean-grid", "Replacing Q, K and V by their mean", caption, chart, rows, head
    )


def _grid_figure(
    key: str, title: str, caption: str, chart: Any, rows: dict[tuple[int, str], Columns], head: int
) -> Figure:
    """A grid figure chunked per observed layer, opening on ``head`` and the same layer."""
    return build_figure(
        key=key,
        title=title,
        caption=caption,
        chart=chart,
        chunks=observation_chunks(rows, (head, "same")),
        params=("observation",),
        default=("same",),
        first_rows=rows[(head, "same")],
    )
