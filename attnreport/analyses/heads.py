"""The O(n x d) tensors of one attention layer, and the query blocks they are analysed in.

``LayerTensors`` is what the blockwise analyses (``attnreport.analyses.blockwise``) read:
per-head q, k, v as the model scores them, the same q, k before the positional transform,
the biases and output projection, plus the options that change the score (scaling,
soft-cap, sliding window, ALiBi slopes, learned sink logits). Nothing here is n x n.

Shape letters: ``head`` (query heads H), ``kv_head`` (H / groups), ``query``/``key``
(token positions, both n), ``d`` (head dim), ``model`` (hidden size).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import torch

from attnreport.records import QueryHeads

# Float32 (query-block x key) tensors alive at once per head while one block is analysed:
# raw scores, capped/masked scores, the unrotated product, probabilities, and a copy
# argmax masks; 8 leaves room for the temporaries torch allocates along the way.
LIVE_TENSORS = 8
DEFAULT_BUDGET_BYTES = 256 * 2**20
CAUSAL_ROWS = 128  # a block's rows below this cost more in calls than the mask wastes


@dataclass(frozen=True)
class LayerTensors(QueryHeads):
    """Everything one attention layer needs for the per-sentence tables, O(n x d) in memory.

    Score of query i and key j (allowed iff ``i - window < j <= i``, or ``j <= i`` without a
    window): ``raw_ij = (q_i . k_j) * scaling + alibi_ij`` with ``alibi_ij = slope_h * j``
    (as BLOOM builds it: the key's position, constant along the row), then
    ``s_ij = softcap * tanh(raw_ij / softcap)`` when ``softcap`` is set, else ``raw_ij``.
    ``p_ij = exp(s_ij) / (sum_allowed exp(s_ij') + exp(sink_h))``; the sink term is absent
    when ``sinks`` is None. Grouped-query heads: query head h reads kv head h // groups.
    """

    layer: int
    x: torch.Tensor  # (query, model) residual stream entering the block
    q_raw: torch.Tensor  # (head, query, d) W_q a + b_q, before the positional transform
    k_raw: torch.Tensor  # (kv_head, key, d) W_k a + b_k, before the positional transform
    q: torch.Tensor  # (head, query, d) as scored (after RoPE and QK-norm where the model has them)
    k: torch.Tensor  # (kv_head, key, d) as scored
    v: torch.Tensor  # (kv_head, key, d)
    q_bias: torch.Tensor  # (head, d) b_q (zeros where the model has none)
    k_bias: torch.Tensor  # (kv_head, d) b_k
    out_weight: torch.Tensor  # (head, d, model) each head's slice of W_o
    out_bias: torch.Tensor  # (model,) b_o
    block_out: torch.Tensor  # (query, model) the model's own attention block output
    scaling: float
    softcap: float | None = None
    window: int | None = None
    alibi_slopes: torch.Tensor | None = None  # (head,)
    sinks: torch.Tensor | None = None  # (head,) learned sink logits
    # (query, model) g / rms(block_out) of a post-attention norm: what the block adds is
    # block_out * out_scale, a head's share its update times it (``records.LayerRecord``)
    out_scale: torch.Tensor | None = None
    # (head, query, d) g * z, what the output projection reads behind an output gate (the
    # model's own gated output, captured whole: O(n x d)), or None without a gate
    gated: torch.Tensor | None = None
    # (head, query, d) probs @ v as the model's attention computed it, where the pass kept
    # it; None: the analyses compute it from their own probabilities
    context: torch.Tensor | None = None

    def __post_init__(self) -> None:
        n_heads, n, _ = self.q.shape
        if self.k.shape[0] == 0 or n_heads % self.k.shape[0]:
            raise ValueError(f"{n_heads} query heads cannot share {self.k.shape[0]} kv heads")
        if self.window is not None and self.window < 1:
            raise ValueError(f"a sliding window must be >= 1, got {self.window}")
        if self.k.shape[1] != n or self.x.shape[0] != n:
            raise ValueError("q, k and x must cover the same tokens")

    @property
    def groups(self) -> int:
        return self.n_heads // int(self.k.shape[0])

    def first_key(self, query: int) -> int:
        """The lowest key index query ``query`` may attend to."""
        return 0 if self.window is None else max(0, query - self.window + 1)

    def n_allowed(self) -> torch.Tensor:
        """(query,) int64: how many keys each query may attend to."""
        queries = torch.arange(self.n_tokens)
        full = queries + 1
        return full if self.window is None else full.clamp(max=self.window)


@dataclass(frozen=True)
class QueryBlock:
    """Queries ``start..stop-1`` and the key range ``first..stop-1`` that covers all of them."""

    start: int
    stop: int
    first: int

    def allowed(self, window: int | None) -> torch.Tensor:
        """(block query, block key) bool: which keys of the range each query may attend to."""
        query = torch.arange(self.start, self.stop)[:, None]
        key = torch.arange(self.first, self.stop)[None, :]
        ok = key <= query
        return ok if window is None else ok & (key > query - window)


def causal_rows(n_keys: int) -> int:
    """The most queries a block takes whatever the budget: an eighth of the input (at least
    ``CAUSAL_ROWS``). A block of queries start..stop-1 computes every key up to stop, so
    its upper triangle is work the causal mask throws away: eight blocks waste an
    eighth of the triangle, one block as much as the whole triangle again."""
    return max(CAUSAL_ROWS, -(-n_keys // 8))


def block_rows(n_heads: int, n_keys: int, budget_bytes: int = DEFAULT_BUDGET_BYTES) -> int:
    """How many queries per block keep the block's working memory within ``budget_bytes``.

    Working memory of one block of b queries: ``LIVE_TENSORS * n_heads * b * n_keys * 4``
    bytes (float32). At least 1 query per block whatever the budget, at most
    ``causal_rows(n_keys)``.
    """
    per_query = LIVE_TENSORS * n_heads * max(n_keys, 1) * 4
    return max(1, min(budget_bytes // per_query, causal_rows(n_keys)))


def query_blocks(tensors: LayerTensors, rows: int) -> Iterator[QueryBlock]:
    """Consecutive blocks of ``rows`` queries covering 0..n-1, each with its key range."""
    if rows < 1:
        raise ValueError(f"a query block needs at least one row, got {rows}")
    for start in range(0, tensors.n_tokens, rows):
        stop = min(start + rows, tensors.n_tokens)
        yield QueryBlock(start, stop, tensors.first_key(start))
