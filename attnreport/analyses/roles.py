"""Head-role scores of one sentence: previous-token, duplicate-token, entropy, distance and
the value-weighted first-token share, per head, over the query tokens ``i >= 1`` (the
previous-token score over ``i >= 2``).

Shape letters: ``head``, ``query``, ``key``, ``d`` (head dim), ``model`` (hidden size).
``p_ij`` is the post-softmax weight of query i on key j over the allowed keys (causal,
sliding window); with learned sinks the row sums to 1 minus the sink's probability.
Definitions (``docs/results-schema.md``, table ``head_roles``):

- previous_token = mean over i >= 2 of ``p_i,i-1`` (0 where the window hides key i-1):
  query 1's previous token is the first token, so a sink head would score there as a
  previous-token head (``PREVIOUS_FROM``); a head that only attends to token 0 scores 0;
- duplicate_token = ``sum(A * D) / sum(A)`` over the rows of the queries whose token occurs
  at an earlier allowed key, ``D_ij = 1`` when ``j < i`` and ``t_j == t_i`` (TransformerLens'
  "mul" form restricted to those rows); 0 when no query repeats a token;
- entropy = mean over i >= 1 of ``-sum_j p_ij ln p_ij`` in nats, the learned sink counted
  as one more outcome; entropy_normalised divides each query's entropy by ``ln`` of its
  number of outcomes (allowed keys, plus the sink), i.e. ``ln(i + 1)`` without window or
  sink (a query with one outcome counts 0);
- distance = mean over i >= 1 of ``sum_j p_ij (i - j)`` in tokens;
- value_first_share = mean over the queries i >= 1 that can see token 0 of
  ``p_i0 ||f_0|| / sum_j p_ij ||f_j||`` (Kobayashi et al. 2020), ``f_j = v_j W_O^h`` the
  head's value through its slice of the output projection (0 where the sum is 0).

Every function works on a block of queries ``start..`` over keys ``first..``, so the
blockwise analyses (``analyses.blockwise``) and the dense ones share it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from attnreport.analyses.tables import Table
from attnreport.analyses.updates import UNSET, gram_factor, written_norms
from attnreport.scratch import Scratch

ROLE_SCORES: tuple[str, ...] = (
    "previous_token",
    "duplicate_token",
    "entropy",
    "entropy_normalised",
    "distance",
    "value_first_share",
)
# the first query the previous-token score counts: query 1's previous token is token 0,
# where every sink head attends, so counting it would make each sink a previous-token head
PREVIOUS_FROM = 2
# per-query values averaged over queries i >= 1 into the per-sentence table
_SUMMED = ("entropy", "entropy_normalised", "distance")


def value_norms(
    v: torch.Tensor, out_weight: torch.Tensor, groups: int = 1, factor: Any = UNSET
) -> torch.Tensor:
    """(head, key) float64: ``||v_j W_O^h||``, the norm of each key's value as head h writes it.

    ``v`` (kv_head, key, d), ``out_weight`` (head, d, model); query head h reads kv head
    ``h // groups``. Through each head's (d, d) Gram factor (``updates.written_norms``), so
    nothing (head, key, model) is made; ``factor``: ``out_weight``'s, where the caller
    has it (``updates.projection_factor``), else it is computed here.
    """
    if groups > 1:
        v = v.repeat_interleave(groups, dim=0)  # (head, key, d)
    return written_norms(v, out_weight, gram_factor(out_weight) if factor is UNSET else factor)


def role_query_values(
    probs: torch.Tensor,
    allowed: torch.Tensor,
    start: int,
    first: int,
    token_ids: torch.Tensor | None,
    norms: torch.Tensor,
    sink: torch.Tensor | None = None,
    scores: torch.Tensor | None = None,
    top: torch.Tensor | None = None,
    pairs: tuple[torch.Tensor, torch.Tensor] | None = None,
    scratch: Scratch | None = None,
) -> dict[str, torch.Tensor]:
    """Per-query role values of a block, each (head, block query) float64.

    ``probs`` (head, query, key): queries ``start..``, keys ``first..`` (0 where not
    allowed); ``allowed`` (query, key) bool on the same block; ``token_ids`` (n,) of the
    whole sentence or None (then no query repeats a token); ``norms`` (head, key) from
    ``value_norms`` for the block's keys; ``sink`` (head, query) the learned sink's
    probability or None. ``scores`` (head, query, key), where given, are what the
    softmax read to give ``probs`` (finite, e.g. the dtype's min, where masked), and
    ``top`` (head, query) each row's top key: the entropy is then read from them
    (``_entropy``) instead of taking a logarithm of every probability; ``pairs``:
    ``repeat_pairs(token_ids)``, where the caller made them once for every block;
    ``scratch``: where the entropy's (head, query, key) temporary goes (a pass's blocks
    reuse one buffer). Keys:
    previous_token (0 on queries below ``PREVIOUS_FROM``), entropy, entropy_normalised, distance, duplicate_mass (sum_j D_ij
    p_ij), row_mass (sum_j p_ij), repeats (1.0 where the query's token occurs at an
    earlier allowed key), first_share (0 where key 0 is outside the block).

    The sums over keys run in ``probs``' dtype (float32 for a pass's probabilities, each
    term of one sign, so a sum is as exact as its terms); the per-query values are float64.
    """
    p = probs if probs.dtype in (torch.float32, torch.float64) else probs.float()
    n_heads, n_rows, n_keys = p.shape
    query = torch.arange(start, start + n_rows)
    key = torch.arange(first, first + n_keys)
    prev_local = query - 1 - first  # local index of key i-1
    has_prev = (prev_local >= 0) & (query >= PREVIOUS_FROM)
    prev = p.gather(-1, prev_local.clamp(min=0).expand(n_heads, -1)[..., None])[..., 0].double()
    mass, weighted, distance = _weighted_sums(p, norms, query, key)
    entropy = _entropy(p, mass, scores, top, scratch)
    if sink is not None:
        entropy = entropy - torch.special.xlogy(sink.double(), sink.double())
    outcomes = allowed.sum(-1).double() + (0.0 if sink is None else 1.0)
    log_outcomes = outcomes.log().clamp(min=1e-300)
    normalised = torch.where(outcomes > 1, entropy / log_outcomes, 0.0)
    values = {
        "previous_token": torch.where(has_prev, prev, 0.0),
        "entropy": entropy,
        "entropy_normalised": normalised,
        "distance": distance,
        "row_mass": mass,
    }
    if token_ids is not None and pairs is None:
        pairs = repeat_pairs(token_ids.long())
    values.update(_duplicates(p, allowed, query, key, pairs))
    values["first_share"] = _first_share(p, norms, weighted, first)
    return values


def _weighted_sums(
    p: torch.Tensor, norms: torch.Tensor, query: torch.Tensor, key: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(mass, value-weighted mass, distance) of each row, (head, query) float64: ``sum_j
    p_ij``, ``sum_j p_ij ||f_j||`` and ``sum_j p_ij (i - j)``, in one matrix product over
    the keys before the block's first query (every query sees them whole) and a product
    over the block's own square. Every query is at or past ``start``, so over those keys
    ``i - j = (i - start) + (start - j)`` is a sum of two non-negative parts: each sum
    adds terms of one sign (no cancellation in float32)."""
    start = int(query[0]) if len(query) else 0
    before = key < start  # (key,)
    columns = [
        torch.ones_like(norms, dtype=p.dtype),
        norms.to(p.dtype),
        torch.where(before, start - key, 0).to(p.dtype).expand_as(norms),
        before.to(p.dtype).expand_as(norms),
    ]
    # (head, 4, key) @ (head, key, query): the same sums as p @ columns, in a third of the
    # CPU time of that four-column product, which this CPU's batched GEMM runs slowly
    sums = torch.bmm(torch.stack(columns, dim=1), p.transpose(1, 2)).transpose(1, 2).double()
    own = int(before.sum())  # the square of the block's own keys (from ``start`` on)
    offsets = (query[:, None] - key[None, own:]).to(p.dtype)  # (query, own key): i - j
    near = (p[..., own:] * offsets).sum(-1).double()  # 0 weight on keys after i
    far = sums[..., 2] + (query - start).double() * sums[..., 3]
    return sums[..., 0], sums[..., 1], far + near


def _entropy(
    p: torch.Tensor,
    mass: torch.Tensor,
    scores: torch.Tensor | None,
    top: torch.Tensor | None,
    scratch: Scratch | None = None,
) -> torch.Tensor:
    """(head, query) float64: ``-sum_j p_ij ln p_ij`` over the block's keys.

    With the scores the softmax read, ``ln p_ij = s_ij - s_top + ln p_top`` (the row's log
    normaliser cancels), so the entropy is ``-sum_j p_ij (s_ij - s_top) - mass ln p_top``:
    two sums of terms of one sign each, no logarithm per key. Without scores, or where a
    masked score is -inf (its 0 x inf is no number), a logarithm of every probability
    (0 ln 0 = 0)."""
    if scores is None:
        return -torch.special.xlogy(p, p).sum(-1).double()
    if top is None:
        top = scores.argmax(-1)
    s_top = scores.gather(-1, top[..., None])  # (head, query, 1)
    p_top = p.gather(-1, top[..., None])[..., 0].double()
    # <= 0: a copy (in ``scratch``'s buffer where given), scores stay as given
    out = None if scratch is None else scratch.tensor("centered", tuple(p.shape), p.dtype, p.device)  # fmt: skip
    centered = torch.sub(scores.to(p.dtype), s_top.to(p.dtype), out=out)
    spread = -centered.mul_(p).sum(-1).double()
    log_top = torch.where(p_top > 0, p_top, 1.0).log()
    entropy = torch.where(mass > 0, spread - mass * log_top, 0.0)
    if bool(entropy.isnan().any()):
        return _entropy(p, mass, None, None)
    return entropy


def _duplicates(
    p: torch.Tensor,
    allowed: torch.Tensor,
    query: torch.Tensor,
    key: torch.Tensor,
    pairs: tuple[torch.Tensor, torch.Tensor] | None,
) -> dict[str, torch.Tensor]:
    """duplicate_mass (head, query) and repeats (query,) broadcast to (head, query), float64,
    from the sentence's ``repeat_pairs`` (None: no token repeats): they are few, so their
    weights are gathered."""
    zeros = torch.zeros(p.shape[:2], dtype=torch.float64)
    if pairs is None or not len(query) or not len(key):
        return {"duplicate_mass": zeros, "repeats": zeros}
    later, earlier = pairs
    start, first = int(query[0]), int(key[0])
    # the pairs come by later position: the block's queries' pairs are one run of them
    lo, hi = torch.searchsorted(later, torch.tensor([start, int(query[-1]) + 1])).tolist()
    later, earlier = later[lo:hi], earlier[lo:hi]
    inside = earlier >= first
    rows, cols = later[inside] - start, earlier[inside] - first
    seen = allowed[rows, cols]  # a window may hide the earlier occurrence
    rows, cols = rows[seen], cols[seen]
    # p[:, rows, cols] as one index_select over flat rows: a sixth of that indexing's time
    weights = p.reshape(p.shape[0], -1).index_select(1, rows * p.shape[-1] + cols)
    mass = zeros.index_add(1, rows, weights.double())
    repeats = torch.zeros(len(query), dtype=torch.float64).index_fill(0, rows, 1.0)
    return {"duplicate_mass": mass, "repeats": repeats.expand(p.shape[0], -1)}


def repeat_pairs(token_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Every (i, j) with ``j < i`` and ``t_j == t_i``, as two int64 tensors (later, earlier)
    ordered by ``i`` (then ``j``), so a block of queries finds its pairs by two binary
    searches: the positions sorted by token, each paired with the earlier ones of its run."""
    order = torch.sort(token_ids, stable=True).indices  # positions grouped by token, ascending
    grouped = token_ids[order]
    new_run = torch.ones(len(order), dtype=torch.bool)
    new_run[1:] = grouped[1:] != grouped[:-1]
    run_start = torch.cummax(torch.where(new_run, torch.arange(len(order)), 0), 0).values
    before = torch.arange(len(order)) - run_start  # earlier positions of the same token
    later = torch.repeat_interleave(torch.arange(len(order)), before)
    step = torch.arange(len(later)) - torch.repeat_interleave(
        torch.cumsum(before, 0) - before, before
    )
    later, earlier = order[later], order[run_start[later] + step]
    by_later = torch.argsort(later * len(order) + earlier)
    return later[by_later], earlier[by_later]


def _first_share(
    p: torch.Tensor, norms: torch.Tensor, weighted: torch.Tensor, first: int
) -> torch.Tensor:
    """(head, query): ``p_i0 ||f_0|| / sum_j p_ij ||f_j||`` (``weighted`` holds the sums);
    0 where key 0 is outside the block or the sum is 0."""
    if first > 0:
        return torch.zeros(p.shape[:2], dtype=torch.float64)
    at_first = p[..., 0].double() * norms[:, :1].double()
    safe = torch.where(weighted > 0, weighted, 1.0)
    return torch.where(weighted > 0, at_first / safe, 0.0)


def head_roles_table(
    layer: int, values: dict[str, torch.Tensor], sees_first: torch.Tensor
) -> Table:
    """The per-sentence ``head_roles`` rows of one layer, one per head in head order.

    ``values``: ``role_query_values`` over every query 0..n-1 (concatenated blocks);
    ``sees_first`` (query,) bool: the queries whose allowed keys include token 0.
    Columns: layer, head, the six ``ROLE_SCORES``, and the weights a set pools them with:
    n_queries (= n - 1, for entropy, entropy_normalised, distance), n_first (queries
    i >= 1 that see token 0, for value_first_share), n_duplicate (queries i >= 1 whose
    token repeats), duplicate_weight (their summed row mass, for duplicate_token) and
    n_previous (= n - 2, the queries i >= 2, for previous_token). A score over no query
    is 0.0.
    """
    n_heads, n = values["entropy"].shape
    rows = slice(1, n)
    table: Table = {
        "layer": np.full(n_heads, layer, dtype=np.int64),
        "head": np.arange(n_heads, dtype=np.int64),
    }
    for name in _SUMMED:
        table[name] = _mean(values[name][:, rows])
    table["previous_token"] = _mean(values["previous_token"][:, PREVIOUS_FROM:])
    repeats = values["repeats"][:, rows] > 0
    weight = (values["row_mass"][:, rows] * repeats).sum(-1)
    mass = (values["duplicate_mass"][:, rows] * repeats).sum(-1)
    table["duplicate_token"] = torch.where(weight > 0, mass / weight.clamp(min=1e-300), 0.0).numpy()
    first = sees_first[rows]
    table["value_first_share"] = _mean(values["first_share"][:, rows][:, first])
    table["n_queries"] = np.full(n_heads, n - 1, dtype=np.int64)
    table["n_first"] = np.full(n_heads, int(first.sum()), dtype=np.int64)
    table["n_duplicate"] = repeats.sum(-1).numpy().astype(np.int64)
    table["duplicate_weight"] = weight.numpy()
    table["n_previous"] = np.full(n_heads, max(n - PREVIOUS_FROM, 0), dtype=np.int64)
    return {k: table[k] for k in ("layer", "head", *ROLE_SCORES, *WEIGHT_COLUMNS)}


WEIGHT_COLUMNS: tuple[str, ...] = (
    "n_queries", "n_first", "n_duplicate", "duplicate_weight", "n_previous",
)  # fmt: skip


def _mean(values: torch.Tensor) -> np.ndarray:
    """(head, query) -> (head,) mean over queries; 0.0 where there is no query."""
    if values.shape[1] == 0:
        return np.zeros(values.shape[0], dtype=np.float64)
    return values.double().mean(1).numpy()


def roles_of_probs(
    layer: int,
    probs: torch.Tensor,
    allowed: torch.Tensor,
    token_ids: torch.Tensor | None,
    norms: torch.Tensor,
    sink: torch.Tensor | None = None,
    scores: torch.Tensor | None = None,
    top: torch.Tensor | None = None,
) -> Table:
    """``head_roles_table`` of a whole (head, query, key) attention pattern at once;
    ``scores`` and ``top``: what ``role_query_values`` reads the entropy from, where the
    caller has the softmax's input and each row's top key."""
    values = role_query_values(probs, allowed, 0, 0, token_ids, norms, sink, scores, top)
    return head_roles_table(layer, values, allowed[:, 0])
