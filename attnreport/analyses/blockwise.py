"""The per-layer tables of the results schema, computed over blocks of queries.

``analyze_layer_blockwise`` gives the same ``top``, ``breakdown``, ``focus``,
``head_impact`` and ``block_impact`` tables as ``analyses.analyze_layer`` on a dense
``LayerRecord``, but from the O(n x d) tensors of ``LayerTensors``: it never holds more
than one block of query rows (head, block query, key) at once, so memory grows with
n x block instead of n x n. Each block holds whole rows (every key a query may see), so
the softmax is exact, not an online approximation. The score itself is computed in the
model's dtype, as the model's eager code does (a bfloat16 model's ranks and ties are its
own); everything after it is float32 (float64 for the norms).

Ranks follow ``analyses.attention_map``: by the score ``s_ij`` as the model computes it
(after soft-capping), ties to the lower key index (``torch.argmax`` returns the first
maximum). The breakdown's ``score`` is the score before soft-capping, which its terms
sum to (without a soft-cap it is ``s_ij`` itself).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from attnreport.analyses.attention_map import top_columns
from attnreport.analyses.breakdown import ranked_columns
from attnreport.analyses.heads import (
    DEFAULT_BUDGET_BYTES,
    LayerTensors,
    QueryBlock,
    block_rows,
    query_blocks,
)
from attnreport.analyses.impact import _ratio, head_impact_columns
from attnreport.analyses.probes import massive_activation_row
from attnreport.analyses.roles import head_roles_table, value_norms
from attnreport.analyses.row_reductions import Block, RoleInputs, reduce_block
from attnreport.analyses.tables import Table
from attnreport.analyses.updates import UNSET, gram_factor, update_numbers
from attnreport.records import TERM_NAMES, after_norm, at_keys


def _repeat(t: torch.Tensor, groups: int) -> torch.Tensor:
    """(kv_head, n, d) -> (head, n, d) float32: each kv head serves ``groups`` query heads."""
    t = t.float()
    return t if groups == 1 else t.repeat_interleave(groups, dim=0)


def block_scores(t: LayerTensors, block: QueryBlock) -> tuple[torch.Tensor, torch.Tensor]:
    """``(raw, scores)``, both (head, block query, block key) float32.

    ``raw`` is (q.k) * scaling + ALiBi, before soft-capping; ``scores`` is the model's score
    after soft-capping, with float32's min where the mask blocks the key (as the model's
    eager attention fills it: finite, so a masked key's weight times its score is 0). The arithmetic up to the
    score runs in the dtype of ``q`` (the model's), as the model's eager code does, so a
    bfloat16 model's ranks and ties are its own; everything after is float32.
    """
    k = t.k[:, block.first : block.stop]
    if t.groups > 1:
        k = k.repeat_interleave(t.groups, dim=0)  # (head, key, d)
    raw = torch.matmul(t.q[:, block.start : block.stop], k.transpose(1, 2)) * t.scaling
    if t.alibi_slopes is not None:
        keys = torch.arange(block.first, block.stop, dtype=torch.float32)
        raw = raw + (t.alibi_slopes.float()[:, None, None] * keys).to(raw.dtype)
    scores = raw if t.softcap is None else torch.tanh(raw / t.softcap) * t.softcap
    allowed = block.allowed(t.window)
    masked = torch.finfo(torch.float32).min
    return raw.float(), scores.float().masked_fill(~allowed, masked)


def block_probs(t: LayerTensors, scores: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(probs, sink)``: probabilities over the block's keys (head, query, key) and the
    probability of the learned sink logit (head, query), 0 without sinks."""
    if t.sinks is None:
        return torch.softmax(scores, dim=-1), scores.new_zeros(scores.shape[:2])
    sink = t.sinks.float()[:, None, None].expand(-1, scores.shape[1], 1)
    probs = torch.softmax(torch.cat([scores, sink], dim=-1), dim=-1)
    return probs[..., :-1], probs[..., -1]


def rank_terms(t: LayerTensors, block: QueryBlock, keys: torch.Tensor) -> dict[str, torch.Tensor]:
    """The score terms (``records.TERM_NAMES``) at the chosen keys, each (head, query, rank).

    ``keys`` (head, query, rank) are global key indices. They sum to the raw score up to
    float32 rounding.
    With scale c: content = c (q_raw - b_q).(k_raw - b_k); bias = c b_q.(k_raw - b_k);
    query_only = c (q_raw - b_q).b_k + c b_q.b_k; position = c q.k - c q_raw.k_raw + ALiBi
    (RoPE: the score with rotation minus without; ALiBi: its bias; absolute: 0).
    """
    kv = (torch.arange(t.n_heads) // t.groups)[:, None, None]  # (head, 1, 1)
    k_raw, k = at_keys(t.k_raw, keys, t.groups), at_keys(t.k, keys, t.groups)
    q_raw = t.q_raw[:, block.start : block.stop, None].float()  # (head, query, 1, d)
    q = t.q[:, block.start : block.stop, None].float()
    c = t.scaling
    raw_product = (q_raw * k_raw).sum(-1) * c
    # The same reduction on both sides, so the term is exactly 0 where q, k are unrotated.
    position = (q * k).sum(-1) * c - raw_product
    if t.alibi_slopes is not None:
        position = position + t.alibi_slopes.float()[:, None, None] * keys.float()
    if not (bool(t.q_bias.any()) or bool(t.k_bias.any())):  # no biases: the general
        zero = torch.zeros_like(position)  # terms below, without their sums of zeros
        return {"position": position, "bias": zero, "content": raw_product, "query_only": zero}
    bq = t.q_bias.float()[:, None, None, :]  # (head, 1, 1, d)
    bk = t.k_bias.float()[kv[:, 0, 0]][:, None, None, :]  # (head, 1, 1, d)
    q_lin, k_lin = q_raw - bq, k_raw - bk
    return {
        "position": position,
        "bias": (bq * k_lin).sum(-1) * c,
        "content": (q_lin * k_lin).sum(-1) * c,
        "query_only": ((q_lin * bk).sum(-1) + (bq * bk).sum(-1)).expand_as(position) * c,
    }


def head_context(t: LayerTensors, block: QueryBlock, probs: torch.Tensor | None) -> torch.Tensor:
    """(head, query, d) float32: what the output projection reads per head. The model's own
    where the pass kept it (``t.context``; behind an output gate the gated output g * z,
    ``t.gated``), else ``probs`` @ v of the block."""
    if t.gated is not None:
        return t.gated[:, block.start : block.stop].float()
    if t.context is not None:
        return t.context[:, block.start : block.stop].float()
    assert probs is not None, "the block's probabilities make its context"
    v = _repeat(t.v[:, block.first : block.stop], t.groups)  # (head, key, d)
    return torch.matmul(probs, v)


def query_numbers(
    t: LayerTensors,
    block: QueryBlock,
    keys: torch.Tensor,
    probs: torch.Tensor | None = None,
    factor: torch.Tensor | None = None,
) -> Block:
    """The per-query numbers of a block that need no (head, query, key) tensor: the score
    terms at the ranked ``keys`` (head, query, rank) and the updates' norm and dot product
    with the residual stream (``updates.update_numbers``; ``factor``: the layer's
    ``updates.gram_factor``)."""
    scale = None if t.out_scale is None else t.out_scale[block.start : block.stop]
    context = head_context(t, block, probs)
    x = t.x[block.start : block.stop]
    u_norm, u_dot = update_numbers(context, t.out_weight, x, scale, factor)
    return {
        **{name: v.double() for name, v in rank_terms(t, block, keys).items()},
        "u_norm": u_norm,
        "u_dot": u_dot,
    }


def analyze_block(
    t: LayerTensors, block: QueryBlock, n_ranks: int, roles: RoleInputs | None = None
) -> Block:
    """Every per-query number of one block (see ``analyze_layer_blockwise``); with
    ``roles``, also the per-query head-role values (keys ``role:NAME``)."""
    raw, scores = block_scores(t, block)
    probs, sink = block_probs(t, scores)
    share = None if t.sinks is None else sink
    reduced = reduce_block(raw, scores, probs, share, block, n_ranks, t.window, roles)
    return reduced | query_numbers(t, block, reduced["keys"], probs, gram_factor(t.out_weight))


def blockwise_rows(
    t: LayerTensors, n_ranks: int, rows: int, roles: RoleInputs | None = None
) -> Block:
    """``analyze_block`` over every block, concatenated along the query axis."""
    blocks = [analyze_block(t, b, n_ranks, roles) for b in query_blocks(t, rows)]
    return _concatenated(blocks)


def completed_rows(t: LayerTensors, reduced: Block, rows: int, factor: Any = UNSET) -> Block:
    """``reduced``, every query's ``reduce_block`` numbers (the model's own pass reduced its
    blocks), with the ``query_numbers`` of each block of ``rows`` queries. ``factor``: the
    output projection's ``updates.gram_factor``, where the caller remembers it."""
    keys = reduced["keys"]
    factor = gram_factor(t.out_weight) if factor is UNSET else factor
    parts = [
        query_numbers(t, b, keys[:, b.start : b.stop], None, factor) for b in query_blocks(t, rows)
    ]
    return reduced | _concatenated(parts)


def _concatenated(blocks: list[Block]) -> Block:
    return {name: torch.cat([b[name] for b in blocks], dim=1) for name in blocks[0]}


def analyze_layer_blockwise(
    t: LayerTensors,
    ranks: int = 3,
    budget_bytes: int = DEFAULT_BUDGET_BYTES,
    rows: int | None = None,
    roles: bool = False,
    token_ids: torch.Tensor | None = None,
    reduced: Block | None = None,
    factor: Any = UNSET,
) -> dict[str, Table]:
    """``top``, ``breakdown``, ``focus``, ``head_impact``, ``block_impact`` of one layer;
    with ``roles``, also ``head_roles`` and ``massive_activations`` (``token_ids`` (n,)
    for the duplicate-token score), as ``sentence.layer_role_tables`` gives them.
    ``reduced``: every query's ``row_reductions.reduce_block`` numbers where the model's
    own pass has reduced its blocks (with ``max(ranks, 2)`` ranks, and the role values
    when ``roles``); None computes the blocks here. ``factor``: the output projection's
    ``updates.gram_factor`` where the caller remembers it (``updates.projection_factor``).

    The tables and their row order are those of ``analyses.analyze_layer``; ``focus`` has
    two more columns, ``first_prob`` (mean of p_i0 over queries i >= 1 that may attend to
    token 0; the sink rate of Gu et al. compares it with 0.3) and ``sink_share`` (mean
    probability of the learned sink logit over queries i >= 1; 0 without one).
    ``rows`` queries per block, or as many as ``budget_bytes`` allows (``heads.block_rows``).
    """
    if ranks < 0:
        raise ValueError(f"breakdown ranks must be >= 0, got {ranks}")
    rows = rows or block_rows(t.n_heads, t.n_tokens, budget_bytes)
    if reduced is not None:
        per_query = completed_rows(t, reduced, rows, factor)
    else:
        norms = value_norms(t.v, t.out_weight, t.groups) if roles else None
        inputs = RoleInputs(token_ids, norms) if norms is not None else None
        per_query = blockwise_rows(t, max(ranks, 2), rows, inputs)
    n_allowed = t.n_allowed()
    p_top2 = torch.where(n_allowed > 1, per_query["probs_at"][..., 1], 0.0)
    top_key, p_top1 = per_query["keys"][..., 0], per_query["probs_at"][..., 0]
    tables = {
        "top": top_rows(t, top_key, p_top1, p_top2),
        "breakdown": breakdown_rows(t, per_query, ranks, n_allowed),
        "focus": focus_rows(t, per_query, top_key, p_top1 - p_top2),
        "head_impact": impact_rows(t, per_query),
        "block_impact": block_impact_rows(t, top_key),
    }
    if roles:
        values = {k[5:]: v for k, v in per_query.items() if k.startswith("role:")}
        sees_first = torch.arange(t.n_tokens) < (t.window or t.n_tokens + 1)
        tables["head_roles"] = head_roles_table(t.layer, values, sees_first)
        tables["massive_activations"] = massive_activation_row(t.layer, t.x)
    return tables


def top_rows(
    t: LayerTensors, top_key: torch.Tensor, p_top1: torch.Tensor, p_top2: torch.Tensor
) -> Table:
    """The ``top`` table from (head, query) top keys and their two largest probabilities."""
    return top_columns(t.layer, top_key, p_top1, p_top2)


def breakdown_rows(t: LayerTensors, per_query: Block, ranks: int, n_allowed: torch.Tensor) -> Table:
    """The ``breakdown`` table, rows in (head, query, rank) order, ranks the row has."""
    n_ranks = min(ranks, t.n_tokens)
    names = (("score", "raw_at"), *((n, n) for n in TERM_NAMES))
    values = {column: per_query[name][..., :n_ranks] for column, name in names}
    return ranked_columns(t.layer, per_query["keys"][..., :n_ranks], n_allowed, values)


def focus_rows(
    t: LayerTensors, per_query: Block, top_key: torch.Tensor, gap: torch.Tensor
) -> Table:
    """The ``focus`` table (one row per head) with ``first_prob`` and ``sink_share``."""
    n_heads, n_queries = t.n_heads, t.n_tokens - 1
    table: Table = {
        "layer": np.full(n_heads, t.layer, dtype=np.int64),
        "head": np.arange(n_heads, dtype=np.int64),
    }
    names = ("self_focus", "first_focus", "concentration", "first_prob", "sink_share")
    n_first = 0
    if n_queries == 0:
        values = [torch.zeros(n_heads, dtype=torch.float64) for _ in names]
    else:
        top, queries = top_key[:, 1:], torch.arange(1, t.n_tokens)
        sees_first = queries < (t.window or t.n_tokens + 1)  # key 0 inside the window
        zeros = torch.zeros(n_heads, dtype=torch.float64)
        seen = bool(sees_first.any())  # first-token statistics: queries that can see key 0
        n_first = int(sees_first.sum())
        values = [
            (top == queries).double().mean(1),
            (top[:, sees_first] == 0).double().mean(1) if seen else zeros,
            gap[:, 1:].double().mean(1),
            per_query["p_first"][:, 1:][:, sees_first].mean(1) if seen else zeros,
            per_query["sink"][:, 1:].mean(1),
        ]
    stats = {name: v.numpy() for name, v in zip(names, values, strict=True)}
    table.update({name: stats[name] for name in names[:3]})  # the dense table's order
    table["n_queries"] = np.full(n_heads, n_queries, dtype=np.int64)
    table.update({name: stats[name] for name in names[3:]})
    table["n_first"] = np.full(n_heads, n_first, dtype=np.int64)
    return table


def impact_rows(t: LayerTensors, per_query: Block) -> Table:
    """The ``head_impact`` table: ||u|| / ||x|| and cos(u, x) per (head, query)."""
    return head_impact_columns(t.layer, t.x, per_query["u_norm"], per_query["u_dot"])


def block_impact_rows(t: LayerTensors, top_key: torch.Tensor) -> Table:
    """The ``block_impact`` table: ||block_out|| / ||x|| (after a post-attention norm, its
    output) and heads whose top key is token 0."""
    x_norm = torch.linalg.vector_norm(t.x.double(), dim=-1)
    out_norm = torch.linalg.vector_norm(after_norm(t.block_out, t.out_scale).double(), dim=-1)
    return {
        "layer": np.full(t.n_tokens, t.layer, dtype=np.int64),
        "query": np.arange(t.n_tokens, dtype=np.int64),
        "magnitude": _ratio(out_norm, x_norm).numpy(),
        "top_first_heads": (top_key == 0).sum(0).numpy().astype(np.int64),
    }
