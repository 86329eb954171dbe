"""Plain values handed from capture to the analyses.

Shape letters: ``head`` (query heads H), ``kv_head`` (key/value heads, H / groups),
``query`` and ``key`` (token positions, both n), ``d`` (head dim), ``model`` (hidden size).
Every tensor is float32 on the CPU, with the batch dimension removed, whatever the
model's dtype and devices: captured values are upcast (exact), derived ones (updates,
score terms, un-rotated q and k) are computed in float32 from them. ``LayerRecord.dtype``
says what the model itself computed in. Nothing here is ever modified in place.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
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
    # (head, query, d) what the output projection reads per head: ``context``, or behind an
    # output gate the gated output g * z; ``updates`` is it through ``out_weight``
    heads_in: torch.Tensor
    out_weight: torch.Tensor  # (head, d, model) each head's slice of W_o
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
    # TERM_NAMES -> (head, query, key); ``terms_at`` reads them at chosen keys
    terms: Mapping[str, torch.Tensor] = field(default_factory=dict)
    dtype: torch.dtype = torch.float32  # the model's: logits, scores, probs were rounded to it

    @property
    def updates(self) -> torch.Tensor:
        """(head, query, model) u: each head's ``heads_in`` through its slice of W_o, float32.
        Made on each read (the analyses read its norms through ``analyses.updates``)."""
        return torch.einsum("hqd,hdm->hqm", self.heads_in.float(), self.out_weight.float())

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


def at_keys(k: torch.Tensor, keys: torch.Tensor, groups: int) -> torch.Tensor:
    """(head, query, rank, d) float32: ``k`` (kv_head, key, d) at ``keys`` (head, query,
    rank), head h reading kv head h // groups: whole rows of ``k`` picked by one
    ``index_select`` (a ``gather`` along an expanded index is 16x slower on the CPU)."""
    heads, n, d = keys.shape[0], k.shape[1], k.shape[-1]
    rows = keys + (torch.arange(heads) // groups * n)[:, None, None]  # rows of (kv_head * key)
    return k.float().reshape(-1, d).index_select(0, rows.reshape(-1)).reshape(*keys.shape, d)


class ScoreTerms(Mapping[str, torch.Tensor]):
    """One layer's ``TERM_NAMES`` -> (head, query, key) float32, made on first read; ``at``
    gives them at chosen keys only, without the n x n products (what the breakdown reads).

    With scale c, un-rotated ``q`` (head, query, d) and ``k`` (kv_head, key, d) and, where
    the model has both, the biases ``q_bias`` (head, d) and ``k_bias`` (kv_head, d):
    content = c (q - b_q).(k - b_k); bias = c b_q.(k - b_k) (target only); query_only =
    c (q - b_q).b_k + c b_q.b_k (current token only); without biases (or with a QK-norm)
    content = c q.k and the other two are 0. position = ``logits`` - c q.k where the model
    rotates (``logits`` (head, query, key): its own, so the terms sum back to it up to
    float32 rounding), ``score_bias`` (head, 1 or query, key) for ALiBi, else 0."""

    def __init__(
        self,
        q: torch.Tensor,
        k: torch.Tensor,
        groups: int,
        scaling: float,
        biases: tuple[torch.Tensor, torch.Tensor] | None = None,
        logits: torch.Tensor | None = None,
        score_bias: torch.Tensor | None = None,
    ) -> None:
        self.q, self.k, self.groups, self.scaling = q, k, groups, scaling
        self.biases, self.logits, self.score_bias = biases, logits, score_bias
        self._whole: dict[str, torch.Tensor] | None = None

    def __getitem__(self, name: str) -> torch.Tensor:
        if self._whole is None:
            self._whole = self._make()
        return self._whole[name]

    def __contains__(self, name: object) -> bool:  # without making the terms (Mapping's reads one)
        return name in TERM_NAMES

    def __iter__(self) -> Iterator[str]:
        return iter(TERM_NAMES)

    def __len__(self) -> int:
        return len(TERM_NAMES)

    def _make(self) -> dict[str, torch.Tensor]:
        q, c, n = self.q, self.scaling, self.q.shape[1]
        k = self.k if self.groups == 1 else self.k.repeat_interleave(self.groups, dim=0)
        zero = torch.zeros(1, 1, 1, dtype=q.dtype, device=q.device).expand(q.shape[0], n, n)
        if self.biases is None:
            content = product = torch.matmul(q, k.transpose(1, 2)) * c
            bias = query_only = zero
        else:
            bq, bk = self._bias_rows(3)  # (head, 1, d)
            q_lin, k_lin = q - bq, k - bk
            content = torch.matmul(q_lin, k_lin.transpose(1, 2)) * c
            bias = (torch.matmul(bq, k_lin.transpose(1, 2)) * c).expand(-1, n, -1)
            row = ((q_lin * bk).sum(-1, keepdim=True) + (bq * bk).sum(-1, keepdim=True)) * c
            query_only = row.expand(-1, -1, n)
            product = torch.matmul(q, k.transpose(1, 2)) * c if self.logits is not None else None
        if self.logits is not None:
            position = self.logits.float() - product
        elif self.score_bias is not None:
            position = self.score_bias.float().expand(-1, n, -1)
        else:
            position = zero
        return {"position": position, "bias": bias, "content": content, "query_only": query_only}

    def _bias_rows(self, dims: int) -> tuple[torch.Tensor, torch.Tensor]:
        """b_q and b_k per query head, each (head, 1, ..., d) with ``dims`` axes."""
        assert self.biases is not None
        bq, bk = self.biases
        if self.groups > 1:
            bk = bk.repeat_interleave(self.groups, dim=0)
        shape = (bq.shape[0], *(1,) * (dims - 2), bq.shape[-1])
        return bq.float().reshape(shape), bk.float().reshape(shape)

    def at(self, keys: torch.Tensor) -> dict[str, torch.Tensor]:
        """Every term at ``keys`` (head, query, rank), each (head, query, rank) float32: dot
        products over d at those keys alone (the same values as the whole terms there, up to
        float32 rounding)."""
        if self._whole is not None:
            return {name: self._whole[name].gather(-1, keys) for name in TERM_NAMES}
        c, q = self.scaling, self.q[:, :, None, :]  # (head, query, 1, d)
        k = at_keys(self.k, keys, self.groups)  # (head, query, rank, d)
        if self.biases is None:
            content = product = (q * k).sum(-1) * c
            bias = query_only = torch.zeros_like(content)
        else:
            bq, bk = self._bias_rows(4)  # (head, 1, 1, d)
            q_lin, k_lin = q - bq, k - bk
            content = (q_lin * k_lin).sum(-1) * c
            bias = (bq * k_lin).sum(-1) * c
            query_only = (((q_lin * bk).sum(-1) + (bq * bk).sum(-1)) * c).expand_as(content)
            product = (q * k).sum(-1) * c if self.logits is not None else None
        if self.logits is not None:
            position = self.logits.gather(-1, keys).float() - product
        elif self.score_bias is not None:
            n = self.q.shape[1]
            position = self.score_bias.float().expand(-1, n, -1).gather(-1, keys)
        else:
            position = torch.zeros_like(content)
        return {"position": position, "bias": bias, "content": content, "query_only": query_only}


def terms_at(terms: Mapping[str, torch.Tensor], keys: torch.Tensor) -> dict[str, torch.Tensor]:
    """Each of ``TERM_NAMES`` at ``keys`` (head, query, rank): ``ScoreTerms.at`` where the
    terms are made on demand, else gathered from the whole (head, query, key) tensors."""
    if isinstance(terms, ScoreTerms):
        return terms.at(keys)
    return {name: terms[name].gather(-1, keys) for name in TERM_NAMES}
