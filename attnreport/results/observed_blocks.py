"""What the interventions keep of an input drawn as blocks: the grids' blocks (schema 7).

A grid cell observes, per observed layer and head, the attention of an input's first
``m`` queries (all of them up to ``map_tokens``, its first ``map_tokens`` past it). The
grids draw more than ``GRID_TOKENS`` positions as blocks of ``size = ceil(m /
GRID_TOKENS)`` tokens (``charts.figures.grid_blocks``): a (current-token block, target
block) value is the attention the block's current tokens give the block's targets,
summed over the targets and averaged over the current tokens. For such an input the
file keeps those block values (at ``PROB_PLACES`` decimals) instead of the m x m
triangles (what is stored is what is drawn: a 163-token input's 16 observed passes on
the default model weigh 0.50 MB instead of 11.6), and, per observation and head, the two
numbers the claims read off the exact rows:

- ``gaps``: the largest ``|p_ij - 1/(i+1)|`` (distance to uniform attention);
- ``moved``: the largest ``|p_ij - p_base_ij|`` against the unmodified pass;
- ``locality`` (schema 9): how much nearer than uniform attention the queries look
  (``localities``: the seed-003 claim's structure measure).

Both from the probabilities rounded as a short input's are stored, so a claim reads the
same number whichever way its input was kept. Numpy only (no torch).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from attnreport.results.rounding import round_places, triangle_list

GRID_TOKENS = 32  # the most positions a grid cell draws per axis (``grid_blocks``)


def block_size(positions: int, limit: int = GRID_TOKENS) -> int:
    """Tokens a block: 1 up to ``limit`` positions, else the smallest size that fits."""
    return max(1, math.ceil(positions / limit))


def block_triangles(probs: np.ndarray, size: int) -> list[list[list[float]]]:
    """``probs`` (head, m, m), rounded, as [head] -> triangle of block values (row ``b``:
    key blocks 0..b), each the block pair's summed weight over the block's queries."""
    heads, m, _ = probs.shape
    count = math.ceil(m / size)
    padded = np.zeros((heads, count * size, count * size))
    padded[:, :m, :m] = np.tril(probs)
    sums = padded.reshape(heads, count, size, count, size).sum(axis=(2, 4))
    queries = np.minimum(size, m - np.arange(count) * size).astype(np.float64)
    shares = round_places(sums / queries[None, :, None])
    return [[shares[h, b, : b + 1].tolist() for b in range(count)] for h in range(heads)]


def uniform_gaps(probs: np.ndarray) -> list[float]:
    """Per head of ``probs`` (head, m, m), the largest ``|p_ij - 1/(i+1)|`` over j <= i."""
    m = probs.shape[1]
    uniform = np.tril(np.broadcast_to(1.0 / np.arange(1, m + 1)[:, None], (m, m)))
    gaps = np.abs(np.tril(probs) - uniform[None])
    return gaps.reshape(len(probs), -1).max(axis=1).tolist() if m else [0.0] * len(probs)


def localities(probs: np.ndarray, allowed: np.ndarray | None = None) -> list[float | None]:
    """Per head of ``probs`` (head, m, m): 1 - D / D_u, D the mean over the queries i >= 1
    that see two keys or more of how far back they look (sum_j p_ij (i - j)) and D_u the
    same under uniform attention over the keys each sees. 0: no nearer than uniform; 1:
    every query on itself; negative: further back (a first-token column). ``allowed``
    (m, m) bool, the keys each query sees (default causal). None for a head with no such
    query."""
    heads, m = probs.shape[0], probs.shape[1]
    if allowed is None:
        allowed = np.tril(np.ones((m, m), dtype=bool))
    back = np.arange(m)[:, None] - np.arange(m)[None, :]  # (query, key): i - j
    rows = (allowed.sum(axis=1) >= 2) & (np.arange(m) >= 1)
    if not rows.any():
        return [None] * heads
    looked = (np.where(allowed, probs, 0.0) * back).sum(axis=2)[:, rows].sum(axis=1)
    uniform = (np.where(allowed, back, 0).sum(axis=1) / allowed.sum(axis=1))[rows].sum()
    return [float(1.0 - d / uniform) for d in looked]


def moved(probs: np.ndarray, base: np.ndarray) -> list[float]:
    """Per head, the largest ``|p_ij - p_base_ij|`` over the causal triangle."""
    change = np.abs(np.tril(probs) - np.tril(base))
    return change.reshape(len(probs), -1).max(axis=1).tolist() if probs.shape[1] else []


def blocked_cell(
    probs: dict[str, np.ndarray], base: dict[str, np.ndarray]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(observations as blocks, the cell's ``blocked`` fields: ``blocks`` [size,
    positions], ``gaps``, ``moved``) from each observation's rounded (head, m, m) ``probs``
    and the unmodified pass's ``base``."""
    m = next(iter(probs.values())).shape[1] if probs else 0
    size = block_size(m)
    observations = {name: block_triangles(p, size) for name, p in probs.items()}
    fields = {
        "blocks": (size, m),
        "gaps": {name: uniform_gaps(p) for name, p in probs.items()},
        "moved": {name: moved(p, base[name]) for name, p in probs.items()},
        "locality": {name: localities(p) for name, p in probs.items()},
    }
    return observations, fields


def kept_whole(probs: dict[str, np.ndarray]) -> dict[str, list[Any]]:
    """[head] -> triangle of each observation's rounded (head, m, m) ``probs``, as the file
    keeps an input kept whole."""
    return {name: [triangle_list(head) for head in p] for name, p in probs.items()}


def kept_baseline(probs: dict[str, np.ndarray], as_blocks: bool) -> dict[str, Any]:
    """The file's observations of an unmodified pass: its blocks for an input drawn as
    blocks (``as_blocks``), else whole triangles."""
    return blocked_cell(probs, probs)[0] if as_blocks else kept_whole(probs)
