"""What the interventions file keeps of an input's observations is computed once, torch-free
(``results.observed_blocks``): the analysis and the fake results both use it."""

from __future__ import annotations

import math

import numpy as np

from attnreport.results.observed_blocks import (
    GRID_TOKENS,
    block_size,
    block_triangles,
    kept_baseline,
    kept_whole,
)


def _rows(m: int, seed: int) -> np.ndarray:
    """(2 heads, m, m) causal rows summing to 1, at more digits than the file keeps."""
    rng = np.random.default_rng(seed)
    weights = np.tril(rng.random((2, m, m)) + 1e-3)
    return weights / weights.sum(axis=2, keepdims=True)


def test_an_input_kept_whole_is_its_triangles_at_six_significant_digits():
    probs = {"same": _rows(4, 0), "last": _rows(4, 1)}
    kept = kept_whole(probs)
    assert list(kept) == ["same", "last"]
    for name, p in probs.items():
        for head, triangle in enumerate(kept[name]):
            expected = [[float(f"{p[head, i, j]:.6g}") for j in range(i + 1)] for i in range(4)]
            assert triangle == expected


def test_a_baseline_is_kept_whole_or_as_the_grids_blocks():
    short = {"same": _rows(5, 2)}
    assert kept_baseline(short, as_blocks=False) == kept_whole(short)
    m = GRID_TOKENS + 8
    long = {"same": _rows(m, 3)}
    blocks = kept_baseline(long, as_blocks=True)["same"]
    assert blocks == block_triangles(long["same"], block_size(m))
    size = block_size(m)
    assert len(blocks) == 2 and len(blocks[0]) == math.ceil(m / size)
    # block (1, 0) of head 1: the weight queries size..2 size-1 give keys 0..size-1, averaged
    p = long["same"][1]
    expected = np.mean([p[q, :size].sum() for q in range(size, 2 * size)])
    assert abs(blocks[1][1][0] - expected) <= 0.5e-6
