"""Plain values handed from capture to the analyses.

Shape letters: ``head`` (query heads H), ``kv_head`` (key/value heads, H / groups),
``query`` and ``key`` (token positions, both n), ``d`` (head dim), ``model`` (hidden size).
Every tensor is float32 on the CPU, with the batch dimension removed, whatever the
model's dtype and devices: captured values are upcast (exact), derived ones (updates,
score terms, un-rotated q and k) are computed in float32 from them. ``LayerRecord.dtype``
says what the model itself computed in. Nothing here is ever modified in place.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

# Names of the additive score terms, in the order the report draws them. They sum to
# ``logits`` (the score before any soft-cap and before the mask):
#   position:   RoPE: logit with rotation minus logit without; ALiBi: the ALiBi bias; absolute: 0.
#   bias:       terms that depend only on the target token (b_q . W_k a_j).
#   content:    the quadratic term (W_q a_i) . (W_k a_j), scaled.
#   query_only: terms that depend only on the current token ((W_q a_i) . b_k, b_q . b_k):
#               they shift a whole row, so they have no effect after softmax.
# With a QK-norm the projection biases pass through a norm and are no longer an additive
# part of q and k: content is then the whole (normed, un-rotated) product and bias and
# query_only are 0.
TERM_NAMES: tuple[str, ...] = ("position", "bias", "content", "query_only")


class QueryHeads:
    """``n_heads`` and ``n_tokens`` of a layer's values, read from its ``q`` (head, query, d)."""

    q: torch.Tensor

    @property
    def n_heads(self) -> int:
        return int(self.q.shape[0])

    @property
    def n_tokens(self) -> int:
        return int(self.q.shape[1])


@dataclass(frozen=True)
class LayerRecord(QueryHeads):
    """Everything one attention layer computed for one sentence.

    Invariants (checked by ``attnreport verify``, within ``attnreport.tolerance``'s bound
    for ``dtype``):
    - ``probs`` equals the model's own attention weights; with learned sinks
      ``probs.sum(-1) + sink_probs == 1``, else ``probs.sum(-1) == 1``;
    - ``updates.sum(0) + out_bias == block_out``;
    - with a post-attention norm, ``(updates.sum(0) + out_bias) * out_scale == post_out``;
    - ``sum(terms.values()) == logits`` wherever ``allowed`` is true;
    - ``scores == softcap(logits) + mask`` (``softcap`` is the identity when None).
    """

    layer: int
    x: torch.Tensor  # (query, model) residual stream entering the block
    a: torch.Tensor  # (query, model) what attention reads (norm(x) for pre-norm blocks)
    q_raw: torch.Tensor  # (head, query, d) q as scored with the rotation undone (= q without RoPE)
    k_raw: torch.Tensor  # (kv_head, key, d) k as scored with the rotation undone
    q: torch.Tensor  # (head, query, d) exactly as scored (after QK-norm and RoPE)
    k: torch.Tensor  # (kv_head, key, d) exactly as scored
    v: torch.Tensor  # (kv_head, key, d)
    logits: torch.Tensor  # (head, query, key) scaling * q.k (+ ALiBi), before soft-cap and mask
    scores: torch.Tensor  # (head, query, key) softcap(logits) + mask: what the softmax reads
    probs: torch.Tensor  # (head, query, key) post-softmax over real keys, 0 where masked
    allowed: torch.Tensor  # (query, key) bool: keys the mask lets through (causal, window)
    context: torch.Tensor  # (head, query, d) probs @ v: the per-head attention output
    updates: torch.Tensor  # (head, query, model) u: context @ the head's slice of W_o
    out_bias: torch.Tensor  # (model,) b_o (zeros where the model has none)
    block_out: torch.Tensor  # (query, model) the model's own output-projection output
    # (query, model) g / rms(block_out) of a post-attention norm (Gemma, OLMo 2), or None:
    # what the block adds is block_out * out_scale, and head h's share updates[h] * out_scale
    out_scale: torch.Tensor | None = None
    post_out: torch.Tensor | None = None  # (query, model) the norm's own output, where captured
    scaling: float = 1.0  # the score scale the model passed
    softcap: float | None = None  # logit soft-cap c: scores = c tanh(logits / c)
    sliding_window: int | None = None  # window size the model passed for this layer
    sink_probs: torch.Tensor | None = None  # (head, query) probability on the learned sink
    terms: dict[str, torch.Tensor] = field(default_factory=dict)  # TERM_NAMES -> (head, query, key)
    dtype: torch.dtype = torch.float32  # the model's: logits, scores, probs were rounded to it

    @property
    def added(self) -> torch.Tensor:
        """(head, query, model): what each head adds to the hidden state, ``updates``, times
        ``out_scale`` after a post-attention norm (the heads' exact shares of its output)."""
        return after_norm(self.updates, self.out_scale)

    @property
    def block_added(self) -> torch.Tensor:
        """(query, model): what the whole block adds, ``block_out`` (times ``out_scale``)."""
        return after_norm(self.block_out, self.out_scale)


def after_norm(values: torch.Tensor, out_scale: torch.Tensor | None) -> torch.Tensor:
    """``values`` (..., query, model) as the block adds them: times ``out_scale`` (query,
    model), g / rms(block_out), after a post-attention norm; as they are without one."""
    return values if out_scale is None else values * out_scale.to(values.dtype)
