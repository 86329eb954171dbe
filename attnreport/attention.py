"""Turn what the attention function computed into a ``LayerRecord``: updates and score terms.

The scores and probabilities come from the pass itself (``attnreport.interface``), in
the model's dtype, exactly as the model computed them; this module adds the per-head
updates (the output projection's per-head slices applied to the function's output) and
the additive score terms of the study. Everything it derives is computed in float32 on
the CPU from the captured tensors (a bfloat16 value upcast to float32 is exact), so a
bfloat16 or float16 model loses nothing to a second, low-precision computation of ours:
see ``docs/precision.md``.

Shape letters: ``head``, ``kv_head``, ``query``, ``key``, ``d`` (head dim), ``model``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attnreport.interface import Computed
from attnreport.models.layout import LayerSpec, unrotate
from attnreport.models.placement import host
from attnreport.records import LayerRecord, ScoreTerms


@dataclass(frozen=True)
class RawLayer:
    """What one layer's pass produced (batch removed). Keys follow ``blocks.{L}.*``."""

    x: torch.Tensor  # blocks.{L}.x: (query, model) block input
    a: torch.Tensor  # blocks.{L}.attn.a: (query, model) attention input
    computed: Computed  # blocks.{L}.attn.fn: what the attention function computed
    rotary: tuple[torch.Tensor, torch.Tensor] | None  # blocks.{L}.attn.rope: (cos, sin)
    block_out: torch.Tensor  # blocks.{L}.attn.out: (query, model) output projection output
    gated: torch.Tensor | None = None  # blocks.{L}.attn.gated: (query, head * d) g * z, or None
    # blocks.{L}.attn.out_scale: (query, model) g / rms(block_out) of a post-attention norm
    out_scale: torch.Tensor | None = None
    post_out: torch.Tensor | None = None  # blocks.{L}.attn.post: (query, model) the norm's output


def allowed_keys(mask: torch.Tensor | None, n: int) -> torch.Tensor:
    """(query, key) bool: where the model's mask lets a key through (causal when none)."""
    if mask is None:
        return torch.ones(n, n, dtype=torch.bool).tril()
    if mask.dtype == torch.bool:
        return mask
    return mask == 0


def unrotated(spec: LayerSpec, raw: RawLayer) -> tuple[torch.Tensor, torch.Tensor]:
    """q (head, query, d) and k (kv_head, key, d) as scored, with any rotation undone, float32.

    The inverse rotation runs in float32 on the upcast q, k, cos and sin: in the model's
    dtype it would add its own rounding to every un-rotated value."""
    q, k = _float32(raw.computed.q), _float32(raw.computed.k)
    if spec.rotate is None or raw.rotary is None:
        return q, k
    cos, sin = (_float32(t) for t in raw.rotary)
    return unrotate(spec.rotate, q, k, cos, sin)


def score_terms(spec: LayerSpec, raw: RawLayer, q_raw, k_raw) -> ScoreTerms:
    """Split the logit (before soft-cap and mask) into ``records.TERM_NAMES``.

    With ``q_raw = W_q a + b_q`` and ``k_raw = W_k a + b_k`` (un-rotated; scale c):
    content = c (W_q a_i).(W_k a_j); bias = c b_q.(W_k a_j) (target only);
    query_only = c (W_q a_i).b_k + c b_q.b_k (current token only); position =
    RoPE: logit - c q_raw_i.k_raw_j; a score bias (ALiBi): that bias; else 0.
    With a QK-norm (biases None) content = c q_raw.k_raw and bias = query_only = 0.
    ``q_raw``, ``k_raw`` are float32 (``unrotated``). With RoPE the position term is the
    model's own logit (upcast) minus our float32 product, so the four terms sum back to
    the model's logit up to float32 rounding whatever the model's dtype. The terms are
    made when first read (``records.ScoreTerms``); the breakdown reads them only at each
    row's first keys (``ScoreTerms.at``).
    """
    computed = raw.computed
    biases = None if spec.q_bias is None or spec.k_bias is None else (spec.q_bias, spec.k_bias)
    rotated = raw.rotary is not None and spec.rotate is not None
    return ScoreTerms(
        q_raw,
        k_raw,
        spec.layout.groups,
        computed.scaling,
        biases,
        logits=computed.logits if rotated else None,
        score_bias=None if rotated else computed.score_bias,
    )


def layer_record(spec: LayerSpec, raw: RawLayer, with_terms: bool = True) -> LayerRecord:
    """Everything the study measures in one layer, as a ``LayerRecord`` of float32 CPU
    tensors (the captured values upcast, exactly; the derived ones computed in float32)."""
    computed = raw.computed
    q_raw, k_raw = unrotated(spec, raw)
    out_weight, out_bias = (host(t).float() for t in spec.out_projection())
    f32 = _float32
    return LayerRecord(
        layer=spec.layer,
        x=f32(raw.x),
        a=f32(raw.a),
        q_raw=q_raw,
        k_raw=k_raw,
        q=f32(computed.q),
        k=f32(computed.k),
        v=f32(computed.v),
        logits=f32(computed.logits),
        scores=f32(computed.scores),
        probs=f32(computed.probs),
        allowed=allowed_keys(computed.mask, computed.q.shape[1]).cpu(),
        context=f32(computed.context),
        heads_in=f32(_update_input(raw)),
        out_weight=out_weight,
        out_bias=out_bias,
        block_out=f32(raw.block_out),
        out_scale=None if raw.out_scale is None else f32(raw.out_scale),
        post_out=None if raw.post_out is None else f32(raw.post_out),
        scaling=computed.scaling,
        softcap=computed.softcap,
        sliding_window=computed.sliding_window,
        sink_probs=None if computed.sink_probs is None else f32(computed.sink_probs),
        terms=score_terms(spec, raw, q_raw, k_raw) if with_terms else {},
        dtype=computed.v.dtype,  # the model's (GPT-J scores q and k upcast to float32)
    )


def _update_input(raw: RawLayer) -> torch.Tensor:
    """(head, query, d): what the output projection reads per head: the function's output, or
    with an output gate the gated output g * z (u_h = W_O,h (g_h * z_h))."""
    if raw.gated is None:
        return host(raw.computed.context)
    return gated_heads(raw.gated, raw.computed.q.shape[0])


def gated_heads(gated: torch.Tensor, heads: int) -> torch.Tensor:
    """(head, query, d) of a captured gated output g * z (query, head * d)."""
    return gated.reshape(gated.shape[0], heads, -1).transpose(0, 1)


def _float32(tensor: torch.Tensor) -> torch.Tensor:
    """A captured tensor on the CPU in float32 (exact for bfloat16 and float16 values)."""
    return host(tensor).float()
