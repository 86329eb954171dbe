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
    fixes_by_row,
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
    tables read: the full sort gives every key's rank (``rank_keys``, the general path of
    ``attention_triangles``; float32 maps sort their rows themselves). Past a row's allowed keys the
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
    return torch.from_numpy(_descending_numpy(values.numpy()))


def _descending_numpy(values: np.ndarray) -> np.ndarray:
    """``descending_keys`` of a float32 numpy array."""
    bits = (-values + np.float32(0.0)).view(np.int32)  # -0.0 + 0.0 is 0.0
    flips = (bits >> 31) | np.int32(-(1 << 31))  # negative: every bit; else the sign bit
    return ascending_keys((bits ^ flips).view(np.uint32))


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


TopKeys = tuple[torch.Tensor, torch.Tensor, torch.Tensor]  # ``top_keys``' three tensors


def top_keys(record: LayerRecord, order: KeyOrder | None = None) -> TopKeys:
    """Top key and the two largest-ranked probabilities of every (head, query) row.

    Returns ``top_key`` (head, query) int64 (-1 for a row with no allowed key), ``p_top1``
    = probability of the rank-0 key and ``p_top2`` = probability of the rank-1 key (0 where
    the row has a single key), both (head, query) float64.
    """
    order = _order_of(record, order)
    probs = record.probs  # gathered, then widened: the same float64 values as widening all
    first = order.order[..., 0]
    top_key = torch.where(order.n_allowed > 0, first, -1)
    top1 = probs.gather(-1, first[..., None])[..., 0].to(torch.float64)
    p_top1 = torch.where(order.n_allowed > 0, top1, 0.0)
    if order.order.shape[-1] < 2:
        return top_key, p_top1, torch.zeros_like(p_top1)
    second = probs.gather(-1, order.order[..., 1:2])[..., 0].to(torch.float64)
    return top_key, p_top1, torch.where(order.n_allowed > 1, second, 0.0)


def head_query_columns(layer: int, n_heads: int, n_queries: int) -> Table:
    """``layer``, ``head``, ``query`` int64 columns for rows in (head, query) order."""
    return {
        "layer": np.full(n_heads * n_queries, layer, dtype=np.int64),
        "head": np.repeat(np.arange(n_heads, dtype=np.int64), n_queries),
        "query": np.tile(np.arange(n_queries, dtype=np.int64), n_heads),
    }


def top_table(
    record: LayerRecord, order: KeyOrder | None = None, top: TopKeys | None = None
) -> Table:
    """The ``top`` table: one row per (head, query), query 0 included, in that order.

    Columns: layer, head, query, top_key (key with rank 0), top_is_self (top_key == query),
    top_is_first (top_key == 0), p_top1, p_top2 (probabilities of the rank-0 and rank-1 keys;
    p_top2 = 0 for a one-key row such as query 0), concentration = p_top1 - p_top2.
    ``top``: ``top_keys(record, order)`` where the caller has it.
    """
    top_key, p_top1, p_top2 = top if top is not None else top_keys(record, order)
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
    """What ``attention_triangles`` keeps of one layer (``results.maps.AttentionMaps``),
    and the key order its sort found on the way."""

    scores: list[FlatTriangle]  # [head] -> rows of the scores, SCORE_PLACES decimals
    rank_fixes: dict[MapRow, RankFix]  # (layer, head, query) -> (keys, their ranks)
    # ``key_order(scores, allowed, depth)`` for the ``depth`` asked (the tables' first
    # ranks, read from the maps' sort of every row instead of sorted again), else None
    order: KeyOrder | None


def attention_triangles(record: LayerRecord, depth: int | None = None) -> KeptMaps:
    """What the results keep of one layer's maps (``results.maps``): ``scores``, a
    ``[head] -> triangle`` of the scores rounded to ``SCORE_PLACES`` decimals, the digits
    the map shows (None where a window masks; every statistic is computed from the
    unrounded scores), and ``rank_fixes``, the keys whose rank (``key_order``'s, over the
    unrounded scores) the rounded ones do not give, by row. Probabilities and ranks are
    derived from these when read. With ``depth``, ``order`` is the ``KeyOrder`` of the
    first ``depth`` ranks that ``key_order`` would give, taken from the maps' own sort.

    float32 scores (every model's, bfloat16 and float16 ones included) take
    ``_float32_maps``, one sort of the layer's rows; others ``key_order`` and
    ``results.maps.rank_fixes``, the general path it is tested against."""
    values = record.scores if record.scores.dtype == torch.float64 else record.scores.float()
    if values.dtype == torch.float32:
        return _float32_maps(record.layer, values, record.allowed, depth)
    order = key_order(values, record.allowed)
    assert order.ranks is not None  # (a full sort)
    allowed = as_numpy(record.allowed).astype(bool)
    n = allowed.shape[0]
    rows, keys, _ = triangle_index(n)
    cells = as_numpy(values)[:, rows, keys].astype(np.float64)  # (head, cell)
    shown = rounded_array(np.where(allowed[rows, keys], cells, np.nan), SCORE_PLACES) + 0.0
    scores = [FlatTriangle(head, n) for head in shown]  # + 0.0: no -0.0
    fixes = rank_fixes(record.layer, scores, order.ranks.numpy(), order.order.numpy())
    first = None if depth is None else _first_ranks(order.order, depth)
    return {
        "scores": scores,
        "rank_fixes": fixes,
        "order": None if first is None else KeyOrder(first, None, order.n_allowed),
    }


def _first_ranks(order: torch.Tensor, depth: int) -> torch.Tensor:
    """Ranks 0..depth-1 of rows of keys by rank (head, query, key), ``order``: rows of
    fewer keys repeat their last one (``ranked_keys``' padding; entries past a row's
    allowed keys are meaningless there too)."""
    first = order[..., :depth]
    if first.shape[-1] < depth:
        last = first[..., -1:]
        first = torch.cat([first, last.expand(*last.shape[:-1], depth - first.shape[-1])], -1)
    return first.contiguous()


_SCALE = float(10**SCORE_PLACES)  # exact
FIX_BLOCK = 32  # queries per block of ``_block_fixes``: fewer masked keys sorted, few calls


def _float32_maps(
    layer: int, scores: torch.Tensor, allowed: torch.Tensor, depth: int | None = None
) -> KeptMaps:
    """``attention_triangles`` of float32 scores (head, query, key), in one sort.

    - Rounding: a float32 times 10**SCORE_PLACES is exact in float64, so ``rint`` of it is
      the exact decimal rounding, ties to even, and dividing back is correctly rounded:
      ``round(v, SCORE_PLACES)`` bit for bit, with no hard cases (``rounded_array``'s).
    - Rank fixes (``_block_fixes``), by blocks of ``FIX_BLOCK`` queries, each sorting only
      the keys up to its last query (the others are masked: a causal triangle).
    Allowed scores must be finite and no key past its query allowed (ValueError)."""
    allowed = allowed.to(torch.bool)
    n_heads, n = scores.shape[0], scores.shape[-1]
    if bool(torch.triu(allowed, 1).any()):
        raise ValueError("the attention maps are causal triangles: a key past its query is allowed")
    values, blocked = scores.numpy(), ~as_numpy(allowed)  # masked entries: the model's fill
    rows, keys, _ = triangle_index(n)
    shown = np.take(values.reshape(n_heads, n * n), rows * n + keys, axis=1).astype(np.float64)
    np.multiply(shown, _SCALE, out=shown)  # in place: the triangle is the largest array here
    np.rint(shown, out=shown)
    np.divide(shown, _SCALE, out=shown)
    shown += 0.0  # no -0.0
    outside = blocked[rows, keys]  # (cell,): a window's masked cells
    if not (np.isfinite(shown) | outside).all():
        raise ValueError("allowed attention scores must be finite")
    if outside.any():
        shown[:, outside] = np.nan
    fixes: dict[MapRow, RankFix] = {}
    ranked = []  # each block's first ``depth`` ranks (head, block query, rank) -> key
    for first in range(0, n, FIX_BLOCK):
        stop = min(n, first + FIX_BLOCK)
        block = np.array(values[:, first:stop, :stop])  # a copy, masked keys -inf: sorted last
        np.copyto(block, -np.inf, where=blocked[first:stop, :stop])
        order = _descending_numpy(block)  # (head, query, rank) -> key
        fixes.update(_block_fixes(layer, block, order, first))
        if depth is not None:
            ranked.append(_first_ranks(torch.from_numpy(order), depth))
    kept: KeptMaps = {
        "scores": [FlatTriangle(head, n) for head in shown],
        "rank_fixes": fixes,
        "order": None,
    }
    if depth is not None and ranked:
        n_allowed = allowed.sum(-1).to(torch.int64)
        kept["order"] = KeyOrder(torch.cat(ranked, 1), None, n_allowed)
    return kept


def _block_fixes(
    layer: int, values: np.ndarray, order: np.ndarray, first: int
) -> dict[MapRow, RankFix]:
    """The ``rank_fixes`` of the queries ``first``.. of ``values`` (head, query, key),
    float32, -inf where masked, whose keys by score are ``order`` (``_descending_numpy``).

    Every row's keys by unrounded score (``descending_keys``' sort): where two neighbours
    in that order round to one value and the later is the lower key, the written scores
    rank them otherwise (their tie goes to the lower key). Only those rows are ordered
    again, by (run of equal rounded values, key): the written scores' order. A key whose
    place differs between the two orders is fixed at its place in the first, its rank."""
    n_heads, n_rows, n = values.shape
    offsets = (np.arange(n_heads * n_rows, dtype=np.int64) * n).reshape(n_heads, n_rows, 1)
    along = values.reshape(-1)[order + offsets]  # the scores in that order
    codes = np.rint(along.astype(np.float64) * _SCALE)  # -inf (masked) stays -inf
    same = codes[..., 1:] == codes[..., :-1]
    heads, queries = np.nonzero((same & (order[..., 1:] < order[..., :-1])).any(-1))
    if not len(heads):
        return {}
    true, same = order[heads, queries], same[heads, queries]  # (row, rank) -> key
    run = np.zeros(true.shape, dtype=np.int64)
    np.cumsum(~same, axis=1, out=run[:, 1:])
    shift = max(1, (n - 1).bit_length())
    # sorted but inside runs: a stable sort (timsort) of these is about linear
    written = np.sort((run << shift) | true, axis=-1, kind="stable") & ((1 << shift) - 1)
    at, rank = np.nonzero(written != true)  # row-major: by row, then rank
    fixed = true[at, rank]
    by_key = np.lexsort((fixed, at))
    return fixes_by_row(layer, heads, first + queries, at[by_key], fixed[by_key], rank[by_key])
