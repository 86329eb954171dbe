"""Long inputs in the intervention grids: blocks of tokens instead of single tokens.

A grid cell of an input with ``m`` observed positions draws ``m (m + 1) / 2`` cells per
head; at 256 positions and nine cells a page would carry and draw hundreds of thousands
of marks. Past ``GRID_TOKENS`` positions the cell is drawn in blocks of ``size``
consecutive tokens (``size = ceil(m / GRID_TOKENS)``). The value of a (current-token
block, target block) pair is the share of attention the block's current tokens give
that block of targets: summed over its targets, averaged over its current tokens. Like
a single weight it lies in 0..1 and a row of blocks sums to 1, and a sink keeps its full
column (a mean over the targets would divide the first token's weight by the block
size). The KL under the grid is the mean over the block's positions. Sums are
``math.fsum``, divided once, so every machine renders the same digits.

``GRID_TOKENS`` is 32: a panel is about 220 px wide, so a block stays about 7 px, large
enough to point at, and a page with three long inputs in its mean grid draws about 0.2 s
sooner than at 64.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from attnreport.results.observed_blocks import (
    GRID_TOKENS,  # the most positions a cell draws
    block_size,
)


@dataclass(frozen=True)
class Blocks:
    """How an input of ``positions`` observed positions is drawn: ``size`` tokens a block."""

    positions: int
    size: int

    @property
    def count(self) -> int:
        return math.ceil(self.positions / self.size) if self.positions else 0

    @property
    def blocked(self) -> bool:
        return self.size > 1

    def span(self, block: int) -> range:
        return range(block * self.size, min((block + 1) * self.size, self.positions))


def blocks_for(positions: int, limit: int = GRID_TOKENS) -> Blocks:
    """Single tokens up to ``limit`` positions, else the smallest block size that fits
    (``observed_blocks.block_size``: the blocks the file keeps are the ones drawn)."""
    return Blocks(positions, block_size(positions, limit))


def block_shares(
    triangle: Sequence[Sequence[float | None]], blocks: Blocks
) -> tuple[list[int], list[int], list[float]]:
    """(query block, key block, share) for every block pair with an allowed cell: the
    weight each query of the block puts on the keys of the key block, summed, then
    averaged over the block's queries.

    ``triangle[q][k]`` is the weight of query ``q`` on key ``k <= q`` (None: masked by a
    sliding window, no weight). Pairs are listed row by row, keys ascending.
    """
    query, key, value = [], [], []
    for qb in range(blocks.count):
        queries = blocks.span(qb)
        for kb in range(qb + 1):
            cells = [
                v
                for q in queries
                for k in blocks.span(kb)
                if k <= q and (v := triangle[q][k]) is not None
            ]
            if cells:
                query.append(qb)
                key.append(kb)
                value.append(math.fsum(cells) / len(queries))
    return query, key, value


def block_kl(kl: Sequence[float], blocks: Blocks) -> list[float]:
    """Mean KL per block over the block's positions (0.0 where no position has a value)."""
    out = []
    for b in range(blocks.count):
        values = [kl[p] for p in blocks.span(b) if p < len(kl)]
        out.append(math.fsum(values) / len(values) if values else 0.0)
    return out


def block_labels(tokens: Sequence[str], blocks: Blocks, width: int = 32) -> list[str]:
    """Tooltip text of each block: ``"4-7: old lighthouse keeper climb…"``."""
    labels = []
    for b in range(blocks.count):
        span = blocks.span(b)
        text = "".join(tokens[p] for p in span if p < len(tokens)).strip()
        text = text if len(text) <= width else text[: width - 1] + "\u2026"
        labels.append(f"{span.start}-{span.stop - 1}: {text}")
    return labels


def blocks_sentence(n_tokens: int, blocks: Blocks) -> str:
    """The caption sentence saying what a blocked input shows ("" when not blocked)."""
    if not blocks.blocked:
        return ""
    observed = (
        f"its first {blocks.positions} positions"
        if blocks.positions < n_tokens
        else f"all {n_tokens} positions"
    )
    return (
        f" An input of {n_tokens} tokens is drawn over {observed} in blocks of "
        f"{blocks.size} tokens: a cell is the share of attention a block of current tokens "
        "gives a block of targets (their weights summed over the targets, averaged over the "
        "current tokens), the KL line the mean over a block, and the tooltips name each "
        "block's positions and text."
    )
