"""Turn what the attention function computed into a ``LayerRecord``: updates and score terms.

The scores and probabilities come from the pass itself (``attnreport.interface``);
this module adds the per-head updates (the output projection's per-head slices applied
to the function's output) and the additive score terms of the study.

Shape letters: ``head``, ``kv_head``, ``query``, ``key``, ``d`` (head dim), ``model``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attnreport.interface import Computed
from attnreport.models.layout import LayerSpec, unrotate
from attnreport.records import LayerRecord


@dataclass(frozen=True)
class RawLayer:
    """What one layer's pass produced (batch removed). Keys follow ``blocks.{L}.*``."""

    x: torch.Tensor  # blocks.{L}.x: (query, model) block input
    a: torch.Tensor  # blocks.{L}.attn.a: (query, model) attention input
    computed: Computed  # blocks.{L}.attn.fn: what the attention function computed
    rotary: tuple[torch.Tensor, torch.Tensor] | None  # blocks.{L}.attn.rope: (cos, sin)
    block_out: torch.Tensor  # blocks.{L}.attn.out: (query, model) output projection output


def repeat_kv(t: torch.Tensor, groups: int) -> torch.Tensor:
    """(kv_head, n, d) -> (head, n, d): each key/value head serves ``groups`` query heads."""
    return t if groups == 1 else t.repeat_interleave(groups, dim=0)


def allowed_keys(mask: torch.Tensor | None, n: int) -> torch.Tensor:
    """(query, key) bool: where the model's mask lets a key through (causal when none)."""
    if mask is None:
        return torch.ones(n, n, dtype=torch.bool).tril()
    if mask.dtype == torch.bool:
        return mask
    return mask == 0


def unrotated(spec: LayerSpec, raw: RawLayer) -> tuple[torch.Tensor, torch.Tensor]:
    """q (head, query, d) and k (kv_head, key, d) as scored, with any rotation undone."""
    q, k = raw.computed.q, raw.computed.k
    if spec.rotate is None or raw.rotary is None:
        return q, k
    return unrotate(spec.rotate, q, k, *raw.rotary)


def score_terms(spec: LayerSpec, raw: RawLayer, q_raw, k_raw) -> dict[str, torch.Tensor]:
    """Split the logit (before soft-cap and mask) into ``records.TERM_NAMES``.

    With ``q_raw = W_q a + b_q`` and ``k_raw = W_k a + b_k`` (un-rotated; scale c):
    content = c (W_q a_i).(W_k a_j); bias = c b_q.(W_k a_j) (target only);
    query_only = c (W_q a_i).b_k + c b_q.b_k (current token only); position =
    RoPE: logit - c q_raw_i.k_raw_j; a score bias (ALiBi): that bias; else 0.
    With a QK-norm (biases None) content = c q_raw.k_raw and bias = query_only = 0.
    Each is (head, query, key), broadcast views where constant along an axis.
    """
    computed, groups, c = raw.computed, spec.layout.groups, raw.computed.scaling
    n = q_raw.shape[1]
    k_all = repeat_kv(k_raw, groups)
    zero = torch.zeros(1, 1, 1, dtype=q_raw.dtype, device=q_raw.device).expand(-1, n, n)
    if spec.q_bias is None or spec.k_bias is None:
        content = torch.matmul(q_raw, k_all.transpose(1, 2)) * c
        bias = query_only = zero.expand(q_raw.shape[0], -1, -1)
    else:
        bq, bk = spec.q_bias[:, None, :], repeat_kv(spec.k_bias, groups)[:, None, :]  # (head, 1, d)
        q_lin, k_lin = q_raw - bq, k_all - bk  # (head, n, d): W_q a, W_k a
        content = torch.matmul(q_lin, k_lin.transpose(1, 2)) * c
        bias = (torch.matmul(bq, k_lin.transpose(1, 2)) * c).expand(-1, n, -1)
        row = ((q_lin * bk).sum(-1, keepdim=True) + (bq * bk).sum(-1, keepdim=True)) * c
        query_only = row.expand(-1, -1, n)
    if raw.rotary is not None and spec.rotate is not None:
        position = computed.logits - torch.matmul(q_raw, k_all.transpose(1, 2)) * c
    elif computed.score_bias is not None:
        position = computed.score_bias.expand(-1, n, -1)
    else:
        position = zero.expand_as(content)
    return {"position": position, "bias": bias, "content": content, "query_only": query_only}


def head_updates(spec: LayerSpec, context: torch.Tensor) -> torch.Tensor:
    """(head, query, model): each head's slice of the output projection applied to its output."""
    return torch.einsum("hqd,hdm->hqm", context, spec.out_weight)


def layer_record(spec: LayerSpec, raw: RawLayer, with_terms: bool = True) -> LayerRecord:
    """Everything the study measures in one layer, as a ``LayerRecord``."""
    computed = raw.computed
    q_raw, k_raw = unrotated(spec, raw)
    return LayerRecord(
        layer=spec.layer,
        x=raw.x,
        a=raw.a,
        q_raw=q_raw,
        k_raw=k_raw,
        q=computed.q,
        k=computed.k,
        v=computed.v,
        logits=computed.logits,
        scores=computed.scores,
        probs=computed.probs,
        allowed=allowed_keys(computed.mask, computed.q.shape[1]).to(computed.q.device),
        context=computed.context,
        updates=head_updates(spec, computed.context),
        out_bias=spec.out_bias,
        block_out=raw.block_out,
        scaling=computed.scaling,
        softcap=computed.softcap,
        sliding_window=computed.sliding_window,
        sink_probs=computed.sink_probs,
        terms=score_terms(spec, raw, q_raw, k_raw) if with_terms else {},
    )
