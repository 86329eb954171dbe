"""Why a query attends where it does: the score of its top keys split into additive terms.

For each (head, query) row and each rank ``r < ranks`` that the row has (row ``i`` of a
causal mask has ``i + 1`` keys), one row gives the rank-``r`` key and its score
``s_ij = position + bias + content + query_only`` (``attnreport.records.TERM_NAMES``).
"""

from __future__ import annotations

import numpy as np
import torch

from attnreport.analyses.attention_map import KeyOrder, key_order
from attnreport.analyses.tables import Table, as_numpy
from attnreport.records import TERM_NAMES, LayerRecord, terms_at


def breakdown_table(record: LayerRecord, ranks: int = 3, order: KeyOrder | None = None) -> Table:
    """The ``breakdown`` table, rows in (head, query, rank) order.

    Columns: layer, head, query, rank, key (the key with that rank; ties to the lower key
    index), score (``record.logits``: before any soft-cap), then one float64 column per term of ``record.terms``
    (position, bias, content, query_only; they sum to ``score`` up to rounding).
    Raises ValueError when ``ranks < 0`` or a term is missing from the record.
    """
    missing = [name for name in TERM_NAMES if name not in record.terms]
    if missing:
        raise ValueError(f"layer {record.layer} record has no score terms {missing}")
    if ranks < 0:
        raise ValueError(f"breakdown ranks must be >= 0, got {ranks}")
    if order is None:
        order = key_order(record.scores, record.allowed)
    n_ranks = min(ranks, record.n_tokens)
    keys = order.order[..., :n_ranks].contiguous()  # (head, query, rank)
    values = {"score": record.logits.gather(-1, keys), **terms_at(record.terms, keys)}
    return ranked_columns(record.layer, keys, order.n_allowed, values)


def ranked_columns(
    layer: int, keys: torch.Tensor, n_allowed: torch.Tensor, values: dict[str, torch.Tensor]
) -> Table:
    """The ``breakdown`` rows of one layer, in (head, query, rank) order, only the ranks a
    row has: keys (head, query, rank) the rank-ordered key indices; n_allowed (query) the
    keys each query sees; values: column -> (head, query, rank) its value at those keys
    (score, then the terms), written as float64. Shared by the whole-layer pass and the
    blockwise one."""
    has_rank = torch.arange(keys.shape[-1]) < n_allowed[:, None]  # (query, rank)
    valid = has_rank.expand_as(keys)
    index = valid.nonzero()  # (rows, 3): head, query, rank, lexicographic
    table: Table = {
        "layer": np.full(index.shape[0], layer, dtype=np.int64),
        "head": index[:, 0].numpy(),
        "query": index[:, 1].numpy(),
        "rank": index[:, 2].numpy(),
        "key": keys[valid].numpy(),
    }
    for name, at_keys in values.items():
        table[name] = as_numpy(at_keys[valid]).astype(np.float64)
    return table
