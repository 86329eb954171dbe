"""What a long sentence's file keeps of its per-query tables: exact rows up to
``map_tokens`` queries, then bins of ``POOL_WIDTH`` query positions (schema 7).

The per-query tables (``top``, ``breakdown``, ``head_impact``) hold a row per (layer,
head, query[, rank]), so they grow with heads x queries: a 5,000-token input on a model
of 270 heads is about 77 MB of them. Past ``map_tokens`` queries the figures draw them
by position bins, so the file keeps what they draw: the queries ``map_tokens``,
``map_tokens + POOL_WIDTH``, ... start a bin each (the last may be shorter), and a bin's
row stands for its queries:

- ``query`` is the bin's first position and ``span`` its number of queries (1 on an exact
  row; ``span`` is written only when some row pools, so a short input's file is as
  before);
- a float column is the mean over the bin's queries (score terms, probabilities,
  magnitudes: a mean of sums is the sum of means, so the breakdown's terms still add up
  to its score);
- an int column that names a position (``key``, ``top_key``) is the bin's most frequent
  value, the lowest on a tie; a bool column is whether it holds for more than half.

The ``block_impact`` table (a row per layer and query, no heads) and every statistic
pooled over all queries (``focus``, the sink rates, the head roles, the set's tables)
are computed from every query before this runs: only what is stored for drawing pools.
Nothing here imports torch.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from attnreport.results import tables as rt

POOL_WIDTH = 32  # query positions a bin holds past ``map_tokens`` (the grids' 32 blocks)
POOLED_TABLES = ("top", "breakdown", "head_impact")
_GROUPS = ("layer", "head", "rank")  # the columns a row is grouped by besides its bin


def bin_starts(query: np.ndarray, map_tokens: int, width: int = POOL_WIDTH) -> np.ndarray:
    """The first position of each query's bin: the query itself below ``map_tokens``."""
    query = np.asarray(query, dtype=np.int64)
    pooled = map_tokens + (query - map_tokens) // width * width
    return np.where(query < map_tokens, query, pooled)


def _codes(columns: list[np.ndarray]) -> np.ndarray:
    """One int64 per row that orders and groups rows as the tuple of ``columns`` does (each
    column shifted to start at 0, then the columns' ranges multiplied out)."""
    code = np.zeros(len(columns[0]), dtype=np.int64)
    for column in columns:
        low = int(column.min()) if len(column) else 0
        span = int(column.max()) - low + 1 if len(column) else 1
        code = code * span + (column.astype(np.int64) - low)
    return code


def _groups(columns: dict[str, np.ndarray], starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(group of each row, first row of each group), groups in the order rows first appear."""
    keys = [np.asarray(columns[name]) for name in _GROUPS if name in columns] + [starts]
    code = _codes(keys)
    if len(code) and bool((code[1:] >= code[:-1]).all()):  # rows in group order (as the
        new = np.r_[True, code[1:] != code[:-1]]  # analyses write them): runs, no sort
        return np.cumsum(new) - 1, np.flatnonzero(new)
    _, first, inverse = np.unique(code, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")  # group ids by first appearance
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return rank[inverse.reshape(-1)], first[order]


def _mode(values: np.ndarray, group: np.ndarray, n: int) -> np.ndarray:
    """Each group's most frequent value, the lowest on a tie."""
    out = np.zeros(n, dtype=np.int64)
    if not len(values):
        return out
    low = int(values.min())
    span = int(values.max()) - low + 1
    pairs, counts = np.unique(group * span + (values - low), return_counts=True)  # by group, value
    owner = pairs // span
    starts = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]])
    most = np.repeat(np.maximum.reduceat(counts, starts), np.diff(np.r_[starts, len(pairs)]))
    best = np.flatnonzero(counts == most)  # in value order within each group
    best = best[np.r_[True, owner[best][1:] != owner[best][:-1]]]  # the lowest such value
    out[owner[best]] = pairs[best] % span + low
    return out


def _pool_column(kind: str, values: np.ndarray, group: np.ndarray, counts: np.ndarray):
    n = len(counts)
    if kind == "float":
        return np.bincount(group, weights=values.astype(np.float64), minlength=n) / counts
    if kind == "bool":
        return np.bincount(group, weights=values.astype(np.float64), minlength=n) * 2 > counts
    return _mode(values.astype(np.int64), group, n)


def pool_table(table: rt.Table, map_tokens: int, width: int = POOL_WIDTH) -> rt.Table:
    """``table`` with its rows past ``map_tokens`` queries pooled into bins (the module
    docstring); the table itself when no row is past it."""
    columns = table.arrays()
    query = columns["query"]
    if not len(query) or int(query.max()) < map_tokens:
        return table
    starts = bin_starts(query, map_tokens, width)
    group, first = _groups(columns, starts)
    counts = np.bincount(group, minlength=len(first)).astype(np.float64)
    out = {}
    for c in table.columns():
        values = columns[c.name]
        if c.name == "query":
            out[c.name] = starts[first]
        elif c.name == "span":
            out[c.name] = counts.astype(np.int64)
        elif c.name in _GROUPS:
            out[c.name] = values[first]
        else:
            out[c.name] = _pool_column(c.kind, values, group, counts)
    return type(table)(**out)


def pool_sentence_tables(tables, map_tokens: int, width: int = POOL_WIDTH):
    """``SentenceTables`` with ``POOLED_TABLES`` pooled past ``map_tokens`` queries."""
    return replace(
        tables,
        **{name: pool_table(getattr(tables, name), map_tokens, width) for name in POOLED_TABLES},
    )


def pooled_from(table: rt.Table) -> int | None:
    """The first position of the first bin of more than one query, None when no row pools."""
    arrays = table.arrays()
    pooled = arrays["query"][arrays["span"] > 1]
    return int(pooled.min()) if len(pooled) else None


def pooled_caption(table: rt.Table, what: str = "each bar") -> str:
    """The caption's sentence about the bins ("" when no row pools): ``what`` names the
    mark that stands for a bin ("each bar", "each point")."""
    start = pooled_from(table)
    if start is None:
        return ""
    return (
        f" The results keep positions 0-{start - 1} one by one (the map_tokens setting) "
        f"and past them the mean of each {POOL_WIDTH} positions, so from position {start} "
        f"on {what} is one such bin, drawn at its first position."
    )
