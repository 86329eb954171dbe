"""Plain values handed from capture to the analyses.

Shape letters: ``head`` (query heads H), ``kv_head`` (key/value heads, H / groups),
``query`` and ``key`` (token positions, both n), ``d`` (head dim), ``model`` (hidden size).
Every tensor is on the CPU, float32 unless the model was loaded in another dtype,
with the batch dimension removed. Nothing here is ever modified in place.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

# Names of the additive score terms, in the order the report draws them.
#   position:   RoPE: score with rotation minus score without; ALiBi: the ALiBi bias; absolute: 0.
#   bias:       terms that depend only on the target token (b_q . W_k a_j).
#   content:    the quadratic term (W_q a_i) . (W_k a_j), scaled.
#   query_only: terms that depend only on the current token ((W_q a_i) . b_k, b_q . b_k):
#               they shift a whole row, so they have no effect after softmax.
TERM_NAMES: tuple[str, ...] = ("position", "bias", "content", "query_only")


@dataclass(frozen=True)
class LayerRecord:
    """Everything one attention layer computed for one sentence.

    Invariants (checked by ``attnreport verify``):
    - ``probs == softmax(scores)`` over ``key`` and equals the model's own attention weights;
    - ``updates.sum(0) + out_bias == block_out``;
    - ``sum(terms.values()) == scores`` wherever ``allowed`` is true.
    """

    layer: int
    x: torch.Tensor  # (query, model) residual stream entering the block
    a: torch.Tensor  # (query, model) what attention reads: norm(x)
    q_raw: torch.Tensor  # (head, query, d) W_q a + b_q, before the positional transform
    k_raw: torch.Tensor  # (kv_head, key, d) W_k a + b_k, before the positional transform
    q: torch.Tensor  # (head, query, d) as used in the score (after RoPE where the model has it)
    k: torch.Tensor  # (kv_head, key, d) as used in the score
    v: torch.Tensor  # (kv_head, key, d)
    scores: torch.Tensor  # (head, query, key) pre-softmax, mask included (masked = model's fill)
    probs: torch.Tensor  # (head, query, key) post-softmax; rows sum to 1, 0 where masked
    allowed: torch.Tensor  # (query, key) bool: entries the mask lets through
    updates: torch.Tensor  # (head, query, model) u: what each head adds to the residual stream
    out_bias: torch.Tensor  # (model,) b_o (zeros where the model has none)
    block_out: torch.Tensor  # (query, model) the model's own attention block output
    terms: dict[str, torch.Tensor] = field(default_factory=dict)  # TERM_NAMES -> (head, query, key)

    @property
    def n_heads(self) -> int:
        return int(self.scores.shape[0])

    @property
    def n_tokens(self) -> int:
        return int(self.scores.shape[1])
