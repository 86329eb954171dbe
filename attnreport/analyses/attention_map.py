"""Which keys each query attends to most: key ranks, the ``top`` table and the score triangles.

Keys are ranked by the pre-softmax score ``s_ij`` (``LayerRecord.scores``), highest first.
Ties are broken towards the **lower key index** (the earlier token), as
``torch.argsort(-scores, stable=True)`` does. Masked keys (``allowed`` false) come after
every allowed key and get rank -1.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

import numpy as np
import torch

from attnreport.analyses.row_reductions import ranked_keys
from attnreport.analyses.tables import Table, as_numpy
from attnreport.records import LayerRecord
from attnreport.results.maps import (
    FlatTriangle,
    RankFix,
    ascending_keys,
    rank_fixes,
    triangle_index,
)
from attnreport.results.maps import Row as MapRow
from attnreport.results.rounding import SCORE_PLACES, rounded_array


@dataclass(frozen=True)
class KeyOrder:
    """Keys of every (head, query) row sorted by score; computed once, shared by the tables."""

    order: torch.Tensor  # (head, query, key) int64: key index at each rank, masked keys last
    ranks: torch.Tensor | None  # (head, query, key) int64: rank of each key (0 = top), -1
    # where masked; None for the first ranks only (``key_order``'s ``depth``)
    n_allowed: torch.Tensor  # (query,) int64: allowed keys per row, so ranks 0..n_allowed-1


def key_order(scores: torch.Tensor, allowed: torch.Tensor, depth: int | None = None) -> KeyOrder:
    """Sort the keys of each row by score, descending, ties to the lower key index.

    ``scores`` (head, query, key), ``allowed`` (query, key) bool. Allowed scores must be
    finite (ValueError otherwise); masked entries may hold anything (the model's fill).
    ``depth``: only the keys of ranks 0..depth-1 (``order`` (head, query, depth), no
    ``ranks``), found by one ``topk`` (``row_reductions.ranked_keys``), which is all the
    tables read: the full sort is for the attention maps. Past a row's allowed keys the
    entries are meaningless there (the tables mask them with ``n_allowed``).
    """
    allowed = allowed.to(torch.bool)
    values = scores if scores.dtype == torch.float64 else scores.float()
    blocked = ~allowed.expand_as(values)
    if not bool((torch.isfinite(values) | blocked).all()):
        raise ValueError("allowed attention scores must be finite")
    n_allowed = allowed.sum(-1).to(torch.int64)
    if depth is not None:
        order = ranked_keys(values.masked_fill(blocked, -torch.inf), depth)
        return KeyOrder(order=order, ranks=None, n_allowed=n_allowed)
    # Every allowed score is > -inf, so masked keys sort after all of them.
    order = descending_keys(values.masked_fill(blocked, -torch.inf))
    positions = torch.arange(values.shape[-1]).expand_as(order)
    ranks = torch.empty_like(order).scatter_(-1, order, positions).masked_fill_(blocked, -1)
    return KeyOrder(order=order, ranks=ranks, n_allowed=n_allowed)


def descending_keys(values: torch.Tensor) -> torch.Tensor:
    """``torch.argsort(-values, dim=-1, stable=True)``: each row's key indices by value,
    highest first, ties to the lower key.

    For float32 values, each negated value's order-preserving bit pattern (an unsigned
    32-bit integer) is sorted by ``results.maps.ascending_keys``: several times faster
    than a stable argsort of floats, and the sort of every row is the largest single cost
    of a kept sentence's analysis (issue 43). -0.0 and 0.0 are made one value first, as
    the float comparison has them."""
    if values.dtype != torch.float32 or values.shape[-1] < 2:
        return torch.argsort(-values, dim=-1, stable=True)
    bits = (-values.numpy() + np.float32(0.0)).view(np.int32)  # -0.0 + 0.0 is 0.0
    flips = (bits >> 31) | np.int32(-(1 << 31))  # negative: every bit; else the sign bit
    return torch.from_numpy(ascending_keys((bits ^ flips).view(np.uint32)))


def rank_keys(scores: torch.Tensor, allowed: torch.Tensor) -> np.ndarray:
    """Rank of every key in its row, (head, query, key) int64: 0 = highest score.

    Ties go to the lower key index (key 2 ranks before key 5 on an equal score); masked
    entries get -1, so row ``i`` holds each of 0..n_allowed(i)-1 exactly once.
    """
    ranks = key_order(scores, allowed).ranks
    assert ranks is not None  # (a full sort)
    return ranks.numpy()


def _order_of(record: LayerRecord, order: KeyOrder | None) -> KeyOrder:
    return order if order is not None else key_order(record.scores, record.allowed)


def top_keys(
    record: LayerRecord, order: KeyOrder | None = None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Top key and the two largest-ranked probabilities of every (head, query) row.

    Returns ``top_key`` (head, query) int64 (-1 for a row with no allowed key), ``p_top1``
    = probability of the rank-0 key and ``p_top2`` = probability of the rank-1 key (0 where
    the row has a single key), both (head, query) float64.
    """
    order = _order_of(record, order)
    probs = record.probs.to(torch.float64)
    first = order.order[..., 0]
    top_key = torch.where(order.n_allowed > 0, first, -1)
    p_top1 = torch.where(order.n_allowed > 0, probs.gather(-1, first[..., None])[..., 0], 0.0)
    if order.order.shape[-1] < 2:
        return top_key, p_top1, torch.zeros_like(p_top1)
    second = probs.gather(-1, order.order[..., 1:2])[..., 0]
    return top_key, p_top1, torch.where(order.n_allowed > 1, second, 0.0)


def head_query_columns(layer: int, n_heads: int, n_queries: int) -> Table:
    """``layer``, ``head``, ``query`` int64 columns for rows in (head, query) order."""
    return {
        "layer": np.full(n_heads * n_queries, layer, dtype=np.int64),
        "head": np.repeat(np.arange(n_heads, dtype=np.int64), n_queries),
        "query": np.tile(np.arange(n_queries, dtype=np.int64), n_heads),
    }


def top_table(record: LayerRecord, order: KeyOrder | None = None) -> Table:
    """The ``top`` table: one row per (head, query), query 0 included, in that order.

    Columns: layer, head, query, top_key (key with rank 0), top_is_self (top_key == query),
    top_is_first (top_key == 0), p_top1, p_top2 (probabilities of the rank-0 and rank-1 keys;
    p_top2 = 0 for a one-key row such as query 0), concentration = p_top1 - p_top2.
    """
    top_key, p_top1, p_top2 = top_keys(record, order)
    return top_columns(record.layer, top_key, p_top1, p_top2)


def top_columns(
    layer: int, top_key: torch.Tensor, p_top1: torch.Tensor, p_top2: torch.Tensor
) -> Table:
    """The ``top`` table from (head, query) top keys and their two largest probabilities
    (shared by the dense and the blockwise analyses)."""
    n_heads, n_tokens = top_key.shape
    query = torch.arange(n_tokens)
    table = head_query_columns(layer, n_heads, n_tokens)
    table.update(
        top_key=top_key.reshape(-1).numpy().astype(np.int64),
        top_is_self=(top_key == query).reshape(-1).numpy(),
        top_is_first=(top_key == 0).reshape(-1).numpy(),
        p_top1=p_top1.reshape(-1).numpy(),
        p_top2=p_top2.reshape(-1).numpy(),
        concentration=(p_top1 - p_top2).reshape(-1).numpy(),
    )
    return table


class KeptMaps(TypedDict):
    """What ``attention_triangles`` keeps of one layer (``results.maps.AttentionMaps``)."""

    scores: list[FlatTriangle]  # [head] -> rows of the scores, SCORE_PLACES decimals
    rank_fixes: dict[MapRow, RankFix]  # (layer, head, query) -> (keys, their ranks)


def attention_triangles(record: LayerRecord, order: KeyOrder | None = None) -> KeptMaps:
    """What the results keep of one layer's maps (``results.maps``): ``scores``, a
    ``[head] -> triangle`` of the scores rounded to ``SCORE_PLACES`` decimals, the digits
    the map shows (None where a window masks; every statistic is computed from the
    unrounded scores), and ``rank_fixes``, the keys whose rank (``order``, over the
    unrounded scores) the rounded ones do not give, by row. Probabilities and ranks are
    derived from these when read."""
    order = _order_of(record, order)
    if order.ranks is None:
        raise ValueError("the attention maps need every key's rank: key_order without depth")
    allowed = as_numpy(record.allowed).astype(bool)
    n = allowed.shape[0]
    rows, keys, _ = triangle_index(n)
    cells = as_numpy(record.scores)[:, rows, keys].astype(np.float64)  # (head, cell)
    shown = rounded_array(np.where(allowed[rows, keys], cells, np.nan), SCORE_PLACES) + 0.0
    scores = [FlatTriangle(head, n) for head in shown]  # + 0.0: no -0.0
    fixes = rank_fixes(record.layer, scores, order.ranks.numpy(), order.order.numpy())
    return {"scores": scores, "rank_fixes": fixes}
