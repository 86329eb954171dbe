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

import numpy as np
import torch

from attnreport.analyses.tables import Table

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


def value_norms(v: torch.Tensor, out_weight: torch.Tensor, groups: int = 1) -> torch.Tensor:
    """(head, key) float64: ``||v_j W_O^h||``, the norm of each key's value as head h writes it.

    ``v`` (kv_head, key, d), ``out_weight`` (head, d, model); query head h reads kv head
    ``h // groups``.
    """
    v = v.float()
    if groups > 1:
        v = v.repeat_interleave(groups, dim=0)  # (head, key, d)
    written = torch.bmm(v, out_weight.float())  # (head, key, model), float32 (a BLAS call)
    return torch.linalg.vector_norm(written, dim=-1).double()


def role_query_values(
    probs: torch.Tensor,
    allowed: torch.Tensor,
    start: int,
    first: int,
    token_ids: torch.Tensor | None,
    norms: torch.Tensor,
    sink: torch.Tensor | None = None,
) -> dict[str, torch.Tensor]:
    """Per-query role values of a block, each (head, block query) float64.

    ``probs`` (head, query, key): queries ``start..``, keys ``first..`` (0 where not
    allowed); ``allowed`` (query, key) bool on the same block; ``token_ids`` (n,) of the
    whole sentence or None (then no query repeats a token); ``norms`` (head, key) from
    ``value_norms`` for the block's keys; ``sink`` (head, query) the learned sink's
    probability or None. Keys: previous_token (0 on queries below ``PREVIOUS_FROM``), entropy, entropy_normalised, distance,
    duplicate_mass (sum_j D_ij p_ij), row_mass (sum_j p_ij), repeats (1.0 where the
    query's token occurs at an earlier allowed key), first_share (0 where key 0 is
    outside the block).
    """
    p = probs.double()
    n_heads, n_rows, n_keys = p.shape
    query = torch.arange(start, start + n_rows)
    key = torch.arange(first, first + n_keys)
    prev_local = query - 1 - first  # local index of key i-1
    has_prev = (prev_local >= 0) & (query >= PREVIOUS_FROM)
    prev = p.gather(-1, prev_local.clamp(min=0).expand(n_heads, -1)[..., None])[..., 0]
    outcomes = allowed.sum(-1).double() + (0.0 if sink is None else 1.0)
    entropy = -torch.special.xlogy(p, p).sum(-1)  # 0 ln 0 = 0
    if sink is not None:
        entropy = entropy - torch.special.xlogy(sink.double(), sink.double())
    log_outcomes = outcomes.log().clamp(min=1e-300)
    normalised = torch.where(outcomes > 1, entropy / log_outcomes, 0.0)
    values = {
        "previous_token": torch.where(has_prev, prev, 0.0),
        "entropy": entropy,
        "entropy_normalised": normalised,
        "distance": (p * (query[:, None] - key[None, :]).double()).sum(-1),
        "row_mass": p.sum(-1),
    }
    values.update(_duplicates(p, allowed, query, key, token_ids))
    values["first_share"] = _first_share(p, norms, first)
    return values


def _duplicates(
    p: torch.Tensor,
    allowed: torch.Tensor,
    query: torch.Tensor,
    key: torch.Tensor,
    token_ids: torch.Tensor | None,
) -> dict[str, torch.Tensor]:
    """duplicate_mass (head, query) and repeats (query,) broadcast to (head, query)."""
    if token_ids is None:
        zeros = p.new_zeros(p.shape[:2])
        return {"duplicate_mass": zeros, "repeats": zeros}
    ids = token_ids.long()
    same = (ids[query][:, None] == ids[key][None, :]) & (key[None, :] < query[:, None]) & allowed
    repeats = same.any(-1).double().expand(p.shape[0], -1)
    return {"duplicate_mass": (p * same.double()).sum(-1), "repeats": repeats}


def _first_share(p: torch.Tensor, norms: torch.Tensor, first: int) -> torch.Tensor:
    """(head, query): ``p_i0 ||f_0|| / sum_j p_ij ||f_j||``; 0 where key 0 is outside."""
    if first > 0:
        return p.new_zeros(p.shape[:2])
    weighted = p * norms.double()[:, None, :]  # (head, query, key)
    total = weighted.sum(-1)
    safe = torch.where(total > 0, total, 1.0)
    return torch.where(total > 0, weighted[..., 0] / safe, 0.0)


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
) -> Table:
    """``head_roles_table`` of a whole (head, query, key) attention pattern at once."""
    values = role_query_values(probs, allowed, 0, 0, token_ids, norms, sink)
    return head_roles_table(layer, values, allowed[:, 0])
