"""Figure 11, attention after scaling Q, K or V, and what every grid figure shares (the mean
grids are ``mean_grids``).

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
    epsilon_label,
    scaling_chart,
)
from attnreport.charts.figures.kl_strip import series, strip_of, together_sentence
from attnreport.charts.spec import common
from attnreport.charts.spec.assemble import build_figure
from attnreport.jsontypes import Row
from attnreport.results import GridCell, Interventions, Manifest, ScalingGrid, SentenceResults
from attnreport.results.maps import flat, triangle_index


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


def shown_tokens(tokens: list[str], cell: GridCell) -> tuple[list[str], str]:
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


def tokens_of(index: int, known: Sequence[SentenceResults]) -> list[str] | None:
    """Display tokens of sentence ``index`` from its results (None when not among them)."""
    for sentence in known:
        if sentence.index == index:
            return sentence_tokens(sentence)
    return None


def default_head(sentence: SentenceResults, n_heads: int) -> int:
    """The head the page opens on (``results.view.default_head``; 0 past ``n_heads``): every
    figure of a page shows one head, so the rows inlined are that head's."""
    head = common.default_head(sentence)[1]
    return head if head < n_heads else 0


def unmodified(
    baseline: Any, like: GridCell, targets: Sequence[str], setting: float | int = 1.0
) -> list[GridCell]:
    """The unmodified run as one cell per target (its maps, KL 0; ``setting``: \u03b5 = 1,
    or the input's sentence), kept like the cell ``like`` of the same input (whole or as
    blocks), so that a grid shows it beside the changed ones."""
    kl = [0.0] * len(like.kl)
    return [GridCell(t, setting, baseline, kl, like.blocks) for t in targets]


def n_heads_of(cells: Sequence[GridCell]) -> int:
    return len(cells[0].observations["same"]) if cells else 0


TARGET_LABELS = {"QK": "Q or K"}  # a scaling cell's target as its row names it (schema 9)
TARGET_ORDER = ("Q", "K", "QK", "V")


def scaling_figure(
    interventions: Interventions,
    sentence: SentenceResults,
    manifest: Manifest,
    sentences: Sequence[SentenceResults] | None = None,
) -> Figure:
    """Fig 11 as a Figure, one data file per observation: the maps of the input the grid
    draws (``ScalingGrid.sentence``); the caption says how many it ran on.

    Token texts come from ``sentence`` or ``sentences`` (whichever is the scaled one);
    without them the tooltips show positions ("#3").
    """
    scaling = interventions.scaling
    epsilons = list(interventions.epsilons)
    present = [t for t in TARGET_ORDER if any(c.target == t for c in scaling.shown)]
    order = {(t, e): i for i, (t, e) in enumerate((t, e) for t in present for e in epsilons)}
    cells = sorted(scaling.shown, key=lambda c: order.get((c.target, c.setting), len(order)))
    n_heads = n_heads_of(cells)
    index = scaling.sentence
    n = len(cells[0].kl) if cells else 0
    tokens = tokens_of(index, [sentence, *(sentences or [])])
    tokens = tokens or [f"#{i}" for i in range(n)]
    tokens, shown = shown_tokens(tokens, cells[0]) if cells else (tokens, "")
    head = default_head(sentence, n_heads)
    observed = dict(interventions.observed_layers)
    targets = [TARGET_LABELS.get(t, t) for t in present]
    rows = grid_rows(
        [*(unmodified(scaling.baseline, cells[0], present) if cells else []), *cells],
        n_heads,
        lambda c: {
            "target": TARGET_LABELS.get(c.target, c.target),
            "eps": epsilon_label(c.setting),
        },
    )
    labels = [epsilon_label(e) for e in epsilons]
    strip = strip_of(series(rows[(head, "same")], "target", "eps"), labels)
    charts = [
        scaling_chart("scaling-grid", tokens, epsilons, n_heads, observed, head, strip, phone,
                      targets)
        for phone in (False, True)
    ]  # fmt: skip
    caption = (
        f"Layer {interventions.layer}: Q, K or V of every head is multiplied by a factor "
        "\u03b5 (columns; the first is the unmodified run) and attention is recomputed in a "
        "real forward pass; each cell is the post-softmax attention map of the chosen head. "
        + QK_ONE
        + " Scaling V leaves this layer's weights unchanged by construction: choose the next "
        "or the last layer to see its effect. Below, the KL divergence of the next-token "
        "distribution from the unmodified run at each position, one colour per \u03b5."
        + together_sentence(strip)
        + inputs_sentence(scaling)
        + shown
    )
    return grid_figure("scaling-grid", "Scaling Q, K and V", caption, charts, rows, head)


QK_ONE = (
    "Q and K scaled by \u03b5 are one intervention: either multiplies every score by \u03b5 "
    "(s = \u03b5 q\u00b7k), tempering the scores towards uniform causal attention; the grid "
    "runs it once, as the row Q or K."
)


def inputs_sentence(scaling: ScalingGrid) -> str:
    """The caption sentence saying which input the maps show and why, and what the grid
    ran on besides."""
    n = len(scaling.inputs)
    which = (
        f" The maps are those of sentence {scaling.sentence}, the one the scaling_sentence "
        "setting names (the first sentence of the set unless it is set), so that they can be "
        "read beside its page's other figures"
    )
    if n == 1:
        return which + "; the grid ran on this sentence only."
    return (
        which + f"; the grid ran on {n} sentences, and the text reports each intervention's "
        f"KL over all {n}, with its spread."
    )


def grid_figure(
    key: str,
    title: str,
    caption: str,
    charts: Sequence[Any],
    rows: dict[tuple[int, str], Columns],
    head: int,
) -> Figure:
    """A grid figure chunked per observed layer, opening on ``head`` and the same layer;
    ``charts``: the page's and the phone's."""
    return build_figure(
        key=key,
        title=title,
        caption=caption,
        chart=charts[0],
        phone_chart=charts[1],
        chunks=observation_chunks(rows, (head, "same")),
        params=("observation",),
        default=("same",),
        first_rows=rows[(head, "same")],
    )
