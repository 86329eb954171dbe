"""Long inputs in the intervention grids: blocks of tokens instead of single tokens.

A grid cell of an input with ``m`` observed positions draws ``m (m + 1) / 2`` cells per
head; at 256 positions and nine cells a page would carry and draw hundreds of thousands
of marks. Past ``GRID_TOKENS`` positions the cell is drawn in blocks of ``size``
consecutive tokens (``size = ceil(m / GRID_TOKENS)``): the value of a (current-token
block, target block) pair is the mean attention weight over its allowed (query, key)
pairs, and the KL under the grid is the mean over the block's positions. Means are
``math.fsum`` sums divided once, so every machine renders the same digits.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

GRID_TOKENS = 64  # the most positions a grid cell draws per axis


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
    """Single tokens up to ``limit`` positions, else the smallest block size that fits."""
    return Blocks(positions, max(1, math.ceil(positions / limit)))


def block_means(
    triangle: Sequence[Sequence[float | None]], blocks: Blocks
) -> tuple[list[int], list[int], list[float]]:
    """(query block, key block, mean weight) for every block pair with an allowed cell.

    ``triangle[q][k]`` is the weight of query ``q`` on key ``k <= q`` (None: masked by a
    sliding window, left out of the mean). Pairs are listed row by row, keys ascending.
    """
    query, key, value = [], [], []
    for qb in range(blocks.count):
        for kb in range(qb + 1):
            cells = [
                v
                for q in blocks.span(qb)
                for k in blocks.span(kb)
                if k <= q and (v := triangle[q][k]) is not None
            ]
            if cells:
                query.append(qb)
                key.append(kb)
                value.append(math.fsum(cells) / len(cells))
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
        f"{blocks.size} tokens: a cell is the mean weight of a block of current tokens on a "
        "block of targets, the KL line the mean over a block, and the tooltips name each "
        "block's positions and text."
    )
