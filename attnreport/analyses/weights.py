"""How many queries a per-sentence focus measure averages over: the weight it pools with.

Torch-free, so that ``render`` (the sink-rate figure and findings) can pool without
importing torch.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

# the measures averaged over the queries that can see token 0 (``n_first`` of them)
FIRST_TOKEN_MEASURES: tuple[str, ...] = ("first_focus", "first_prob")


def query_weights(focus: Mapping[str, np.ndarray], measure: str) -> np.ndarray:
    """How many queries ``measure`` of a per-sentence focus table averages over, per row.

    ``n_first`` (queries ``i >= 1`` whose window holds token 0) for the first-token
    measures, ``n_queries`` for the others; tables written before ``n_first`` existed
    carry ``-1`` there and fall back to ``n_queries`` (exact for models without windows).
    """
    n_queries = np.asarray(focus["n_queries"], dtype=np.int64)
    if measure not in FIRST_TOKEN_MEASURES or "n_first" not in focus:
        return n_queries
    n_first = np.asarray(focus["n_first"], dtype=np.int64)
    return np.where(n_first < 0, n_queries, n_first)
