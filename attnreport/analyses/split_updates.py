"""Each head's update size split by where the query looks: the source blog's claim in
its own scope ("when attention focuses on the first token, that head has no impact on the
hidden state", per token).

Per (layer, head), over the queries ``i >= 1``: ``first_update`` is the median of
``||u_i|| / ||x_i||`` over the queries whose top key is the first token, ``other_update``
the median over the other queries (0.0 where there is none; the counts are
``first_focus * n_first`` and ``n_queries`` minus that). Medians, so a few very large
updates cannot carry the comparison. Numpy only: the analysis computes it from a
sentence's full ``top`` and ``head_impact`` tables before anything is binned for storage.
"""

from __future__ import annotations

import numpy as np

from attnreport.analyses.tables import Table

SPLIT_COLUMNS: tuple[str, ...] = ("first_update", "other_update")


def _medians(values: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """(row,) median of ``values`` (row, query) over the queries ``keep`` holds; 0 where none."""
    masked = np.where(keep, values, np.nan)
    out = np.zeros(values.shape[0], dtype=np.float64)
    some = keep.any(axis=1)
    if some.any():
        out[some] = np.nanmedian(masked[some], axis=1)
    return out


def split_updates(top: Table, head_impact: Table) -> Table:
    """``first_update`` and ``other_update`` per (layer, head), rows in (layer, head) order.

    top, head_impact: one sentence's ``top`` (top_key) and ``head_impact`` (magnitude)
    tables, one row per (layer, head, query) for every query, in the same order (as the
    analyses give them). ValueError when their rows do not line up.
    """
    keys = ("layer", "head", "query")
    if any(not np.array_equal(top[k], head_impact[k]) for k in keys):
        raise ValueError("the top and head_impact rows must be the same (layer, head, query)")
    layer, head, query = (np.asarray(top[k], dtype=np.int64) for k in keys)
    n_tokens = int(query.max()) + 1 if len(query) else 0
    if n_tokens == 0 or len(query) % n_tokens:
        raise ValueError("every head needs a row for every query")
    rows = len(query) // n_tokens
    top_key = np.asarray(top["top_key"]).reshape(rows, n_tokens)[:, 1:]  # (row, query >= 1)
    size = np.asarray(head_impact["magnitude"], dtype=np.float64).reshape(rows, n_tokens)[:, 1:]
    first = top_key == 0
    return {
        "layer": layer[::n_tokens],
        "head": head[::n_tokens],
        "first_update": _medians(size, first),
        "other_update": _medians(size, ~first),
    }
