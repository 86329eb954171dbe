"""What one block of a layer's (head, query, key) scores and probabilities reduces to.

Every per-query number the tables need (the top keys, their probabilities and scores,
the first token's probability, the sink's share, the head-role values) is read here, in
one visit of the block. The blockwise analyses (``analyses.blockwise``) compute a block
and reduce it; the streamed sentence pass reduces the blocks the model's own attention
computed (``streaming.blockwise_attention``), so a long input's n x n values are made
once, by the model's pass, and never again.

Shape letters: ``head``, ``query`` (the block's rows), ``key`` (the block's keys, from
``QueryBlock.first``), ``rank``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import torch

from attnreport.analyses.heads import QueryBlock
from attnreport.analyses.roles import repeat_pairs, role_query_values
from attnreport.scratch import Scratch

Block = dict[str, torch.Tensor]  # per-block results, every value (head, block query, ...)


def _ranked_by_argmax(scores: torch.Tensor, n_ranks: int) -> torch.Tensor:
    """(rows, n_ranks): the first maximum, then the first of the rest, ... of each row."""
    work = scores.clone()
    picks = []
    for _ in range(n_ranks):
        best = work.argmax(dim=-1)  # the first maximum: ties go to the lower key index
        picks.append(best)
        work.scatter_(-1, best[..., None], -torch.inf)
    return torch.stack(picks, dim=-1)


def ranked_keys(scores: torch.Tensor, n_ranks: int) -> torch.Tensor:
    """(head, query, n_ranks) int64: the keys with ranks 0..n_ranks-1 of each row, as indices
    into the last axis of ``scores``; ties to the lower index. Entries past a row's allowed
    keys are meaningless (callers mask them with the row's key count).

    One ``topk`` of ``n_ranks + 1`` keys decides every row whose chosen scores differ from
    each other and from the next one; the rows with a tie among them (rare with float
    scores; the rows of fewer keys than ranks) are ranked again one maximum at a time, the
    first maximum winning, as the dense ``key_order`` does."""
    n_keys = scores.shape[-1]
    r = min(n_ranks, n_keys)
    if r == 0:
        return torch.zeros((*scores.shape[:-1], n_ranks), dtype=torch.int64)
    values, keys = scores.topk(min(r + 1, n_keys), dim=-1)  # descending
    keys = keys[..., :r]
    tied = (values[..., 1:] == values[..., :-1]).any(-1)  # (head, query)
    if bool(tied.any()):
        rows = tied.nonzero(as_tuple=True)
        keys[rows] = _ranked_by_argmax(scores[rows], r)
    if r == n_ranks:
        return keys
    return torch.cat([keys, keys[..., -1:].expand(*keys.shape[:-1], n_ranks - r)], dim=-1)


@dataclass(frozen=True)
class RoleInputs:
    """What the head-role scores need besides the block: the sentence's token ids (n,) or
    None, and ``roles.value_norms`` (head, key) of the layer."""

    token_ids: torch.Tensor | None
    norms: torch.Tensor

    @cached_property
    def pairs(self) -> tuple[torch.Tensor, torch.Tensor] | None:
        """``roles.repeat_pairs`` of the token ids, made once for every block."""
        return None if self.token_ids is None else repeat_pairs(self.token_ids.long())


def reduce_block(
    raw: torch.Tensor,
    scores: torch.Tensor,
    probs: torch.Tensor,
    sink: torch.Tensor | None,
    block: QueryBlock,
    n_ranks: int,
    window: int | None,
    roles: RoleInputs | None = None,
    scratch: Scratch | None = None,
) -> Block:
    """Every per-query number of one block that needs its (head, query, key) values.

    ``raw`` (head, query, key) the score before soft-capping, in any float dtype;
    ``scores`` the score the softmax read, with a large negative value where the mask
    blocks the key (``torch.finfo(dtype).min``, as the model's eager attention fills it);
    ``probs`` float32 over the block's keys; ``sink`` (head, query) the learned sink's
    probability, or None. Keys: ``keys`` (global indices of ranks 0..n_ranks-1),
    ``probs_at`` and ``raw_at`` at them, ``p_first`` (p_i0; 0 where key 0 is outside the
    block), ``sink``, and with ``roles`` the ``roles.role_query_values`` prefixed ``role:``.
    Everything float64 but the keys; nothing given is changed, and nothing returned is a
    view of it. ``scratch``: where the role values' temporaries go (``roles.role_query_values``).
    """
    local = ranked_keys(scores, n_ranks)  # (head, query, rank)
    zeros = torch.zeros(probs.shape[:2], dtype=torch.float64)
    sink_share = zeros if sink is None else sink.double()
    out = {
        "keys": local + block.first,
        "probs_at": probs.gather(-1, local).double(),
        "raw_at": raw.gather(-1, local).double(),
        "p_first": probs[..., 0].double() if block.first == 0 else zeros,
        "sink": sink_share,
    }
    if roles is None:
        return out
    values = role_query_values(
        probs,
        block.allowed(window),
        block.start,
        block.first,
        roles.token_ids,
        roles.norms[:, block.first : block.stop],
        sink,
        scores=scores,
        top=local[..., 0] if n_ranks else None,
        pairs=roles.pairs,
        scratch=scratch,
    )
    return out | {f"role:{name}": value for name, value in values.items()}
