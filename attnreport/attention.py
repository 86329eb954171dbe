"""The attention arithmetic of one layer, reproduced from the tensors the model produced.

Capture records what the model computed on its way through each block (the
projection outputs, the mask, the positional tensors, the block output). This module
turns those into scores, probabilities, per-head updates and the additive score
terms of the study, in the same operation order as the model's eager code, so
``attnreport verify`` can compare them with the model's own numbers.

Shape letters: ``head``, ``kv_head``, ``query``, ``key``, ``d`` (head dim), ``model``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from attnreport.models.families import (
    Family,
    HeadLayout,
    head_layout,
    out_weights,
    qk_biases,
    rotary_function,
    split_qkv,
)
from attnreport.records import LayerRecord


@dataclass(frozen=True)
class LayerSpec:
    """The fixed, per-layer facts needed to redo the arithmetic (weights are views, not copies)."""

    layer: int
    family: Family
    layout: HeadLayout
    q_bias: torch.Tensor  # (head, d)
    k_bias: torch.Tensor  # (kv_head, d)
    out_weight: torch.Tensor  # (head, d, model)
    out_bias: torch.Tensor  # (model,)
    rotate: Callable[..., tuple[torch.Tensor, torch.Tensor]] | None


def layer_specs(family: Family, model: nn.Module) -> list[LayerSpec]:
    """One ``LayerSpec`` per block, read from the model's modules."""
    specs = []
    for index, block in enumerate(family.blocks(model)):
        attn = family.attention(block)
        layout = head_layout(family, attn, model.config)
        q_bias, k_bias = qk_biases(family, attn, layout)
        out_weight, out_bias = out_weights(family, attn, layout)
        rotate = rotary_function(attn) if family.positional == "rope" else None
        specs.append(LayerSpec(index, family, layout, q_bias, k_bias, out_weight, out_bias, rotate))
    return specs


@dataclass(frozen=True)
class RawLayer:
    """What the hooks saw in one block (batch removed). Keys follow ``blocks.{L}.*``."""

    x: torch.Tensor  # blocks.{L}.x: (query, model) block input
    a: torch.Tensor  # blocks.{L}.attn.a: (query, model) attention input
    projections: list[torch.Tensor]  # blocks.{L}.attn.proj: outputs of the q/k/v projection(s)
    mask: torch.Tensor | None  # blocks.{L}.attn.mask: (query, key) additive or bool, or None
    positional: tuple[torch.Tensor, ...] | None  # RoPE (cos, sin) or ALiBi (head, 1, key)
    block_out: torch.Tensor  # blocks.{L}.attn.out: (query, model) output projection output


def repeat_kv(t: torch.Tensor, groups: int) -> torch.Tensor:
    """(kv_head, n, d) -> (head, n, d): each key/value head serves ``groups`` query heads."""
    return t if groups == 1 else t.repeat_interleave(groups, dim=0)


def additive_mask(mask: torch.Tensor | None, n: int, dtype: torch.dtype) -> torch.Tensor:
    """The model's mask as an additive (query, key) tensor; causal when the model passed none."""
    if mask is None:
        allowed = torch.ones(n, n, dtype=torch.bool).tril()
        return torch.zeros(n, n, dtype=dtype).masked_fill(~allowed, torch.finfo(dtype).min)
    if mask.dtype == torch.bool:
        return torch.zeros(mask.shape, dtype=dtype).masked_fill(~mask, torch.finfo(dtype).min)
    return mask


def positioned(spec: LayerSpec, raw: RawLayer, q_raw: torch.Tensor, k_raw: torch.Tensor):
    """q and k as they enter the score: rotated by the model's own RoPE where it has one."""
    if spec.rotate is None:
        return q_raw, k_raw
    cos, sin = raw.positional  # type: ignore[misc]
    q, k = spec.rotate(q_raw[None], k_raw[None], cos, sin)  # (1, head, query, d)
    return q[0], k[0]


def heads_of(spec: LayerSpec, raw: RawLayer) -> tuple[torch.Tensor, ...]:
    """(q_raw, k_raw, q, k, v): the model's projections split per head, and q, k as they
    enter the score (after the positional transform)."""
    q_raw, k_raw, v = split_qkv(spec.family, raw.projections, spec.layout)
    q, k = positioned(spec, raw, q_raw, k_raw)
    return q_raw, k_raw, q, k, v


def attend(
    spec: LayerSpec,
    raw: RawLayer,
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Scores, probabilities, per-head updates and block output from positioned q, k, v.

    Returns scores (head, query, key) with the mask added, probs (head, query, key),
    updates (head, query, model) and block_out (query, model) = updates.sum(0) + b_o.
    """
    groups = spec.layout.groups
    k_all, v_all = repeat_kv(k, groups), repeat_kv(v, groups)  # (head, key, d)
    if spec.family.positional == "alibi":
        alibi = raw.positional[0]  # type: ignore[index]
        logits = torch.baddbmm(alibi, q, k_all.transpose(1, 2), beta=1.0, alpha=spec.layout.scaling)
    else:
        logits = torch.matmul(q, k_all.transpose(1, 2)) * spec.layout.scaling
    scores = logits + additive_mask(raw.mask, q.shape[1], logits.dtype)
    probs = torch.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)
    context = torch.matmul(probs, v_all)  # (head, query, d)
    updates = torch.einsum("hqd,hdm->hqm", context, spec.out_weight)  # (head, query, model)
    return scores, probs, updates, updates.sum(0) + spec.out_bias


def score_terms(
    spec: LayerSpec,
    raw: RawLayer,
    q_raw: torch.Tensor,
    k_raw: torch.Tensor,
    scores: torch.Tensor,
    allowed: torch.Tensor,
) -> dict[str, torch.Tensor]:
    """Split the unmasked score into the additive terms of ``records.TERM_NAMES``.

    With ``q_raw = W_q a + b_q`` and ``k_raw = W_k a + b_k`` (scale c):
    content = c (W_q a_i).(W_k a_j); bias = c b_q.(W_k a_j) (target only);
    query_only = c (W_q a_i).b_k + c b_q.b_k (current token only);
    position = RoPE: s_ij - c q_raw_i.k_raw_j (the score with rotation minus without);
    ALiBi: the ALiBi tensor; absolute: 0. Each is (head, query, key), broadcast views
    where a term is constant along an axis; their sum equals the score wherever the
    mask allows (terms are 0 where it does not).
    """
    groups, scale = spec.layout.groups, spec.layout.scaling
    n = q_raw.shape[1]
    bq, bk = spec.q_bias[:, None, :], repeat_kv(spec.k_bias, groups)[:, None, :]  # (head, 1, d)
    q_lin, k_lin = q_raw - bq, repeat_kv(k_raw, groups) - bk  # (head, n, d): W_q a, W_k a
    content = torch.matmul(q_lin, k_lin.transpose(1, 2)) * scale
    bias = (torch.matmul(bq, k_lin.transpose(1, 2)) * scale).expand(-1, n, -1)
    query_only = ((q_lin * bk).sum(-1, keepdim=True) + (bq * bk).sum(-1, keepdim=True)) * scale
    if spec.family.positional == "rope":
        unrotated = torch.matmul(q_raw, repeat_kv(k_raw, groups).transpose(1, 2)) * scale
        position = torch.where(allowed, scores - unrotated, 0.0)
    elif spec.family.positional == "alibi":
        position = raw.positional[0].expand(-1, n, -1)  # type: ignore[index]
    else:
        position = torch.zeros(1, 1, 1, dtype=content.dtype).expand_as(content)
    return {
        "position": position,
        "bias": bias,
        "content": content,
        "query_only": query_only.expand(-1, -1, n),
    }


def layer_record(spec: LayerSpec, raw: RawLayer, with_terms: bool = True) -> LayerRecord:
    """Everything the study measures in one layer, as a ``LayerRecord``."""
    q_raw, k_raw, q, k, v = heads_of(spec, raw)
    scores, probs, updates, _ = attend(spec, raw, q, k, v)
    allowed = additive_mask(raw.mask, q.shape[1], scores.dtype) == 0
    return LayerRecord(
        layer=spec.layer,
        x=raw.x,
        a=raw.a,
        q_raw=q_raw,
        k_raw=k_raw,
        q=q,
        k=k,
        v=v,
        scores=scores,
        probs=probs,
        allowed=allowed,
        updates=updates,
        out_bias=spec.out_bias,
        block_out=raw.block_out,
        terms=score_terms(spec, raw, q_raw, k_raw, scores, allowed) if with_terms else {},
    )
