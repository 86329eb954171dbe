"""GPT-J: an adapter, because its attention computes softmax(q.k) inline and rotates q and
k itself (pairs of adjacent dims, the first ``rotary_dim`` of each head).

While adapted each ``GPTJAttention`` is handed the (cos, sin) its sinusoid table gives for
the position ids (``positions``, repeated per pair, in the model's dtype; from transformers
5.24 the model hands its attention (sin, cos) of that table itself, which ``positions``
reorders and repeats the same way) and runs
``routed_forward``: the same rotation (``rotate``: the model's elementwise ops, so the
same numbers), scores in float32 scaled by 1 / sqrt(d) as GPT-J does, under the mask the
model passes, and its own ``out_proj``. CodeGen uses the same rotation.
"""

from __future__ import annotations

import torch

from attnreport.models.families.adapter import Adapter, interface_function


def rotate_every_two(x: torch.Tensor) -> torch.Tensor:
    """(..., r) -> (..., r): each pair (x1, x2) of adjacent dims to (-x2, x1)."""
    return torch.stack((-x[..., 1::2], x[..., ::2]), dim=-1).flatten(-2)


def rotate(q, k, cos, sin):
    """q (batch, head, n, r), k alike; cos, sin (batch, n, r): GPT-J's ``apply_rotary_pos_emb``."""
    cos, sin = cos[:, None], sin[:, None]
    return q * cos + rotate_every_two(q) * sin, k * cos + rotate_every_two(k) * sin


def pairs(sin: torch.Tensor, cos: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(cos, sin) repeated per pair of adjacent dims, from one value per pair each."""
    return cos.repeat_interleave(2, -1), sin.repeat_interleave(2, -1)


def hands_positions(module) -> bool:
    """Whether the model hands the module its positions (transformers 5.24 on: the sinusoid
    table moved from the attention module to the model)."""
    return not hasattr(module, "embed_positions")


def table_positions(table_dtype=None):
    """``Adapter.positions`` for GPT-J and CodeGen: (cos, sin), each (batch, n, rotary_dim),
    of the sinusoid table (sin | cos). Up to transformers 5.23 the attention module holds the
    table (``embed_positions``) and is given position ids; from 5.24 the model hands it
    ``position_embeddings`` = (sin, cos) of the same table, one value per pair. None when
    neither is there (nothing to hand). ``table_dtype``: the dtype the module reads its own
    table in (a function of the module), or None for the table's own."""

    def positions(module, kwargs):
        if hands_positions(module):
            handed = kwargs.get("position_embeddings")
            return None if handed is None else pairs(*handed)
        ids = kwargs.get("position_ids")
        if kwargs.get("position_embeddings") is not None or ids is None:
            return None
        sincos = module.embed_positions.to(ids.device)[ids]
        if table_dtype is not None:
            sincos = sincos.to(table_dtype(module))
        return pairs(*torch.split(sincos, sincos.shape[-1] // 2, dim=-1))

    return positions


def scaling(module) -> float:
    """The score scale 1 / sqrt(d) as the module holds it (``scaling`` from transformers
    5.24, ``1 / scale_attn`` before)."""
    own = getattr(module, "scaling", None)
    return float(own) if own is not None else 1.0 / float(module.scale_attn)


def rotated(q, k, cos, sin):
    """``rotate`` on the first ``r = cos.shape[-1]`` dims of q and k (the rest passed)."""
    r = cos.shape[-1]
    q_r, k_r = rotate(q[..., :r], k[..., :r], cos, sin)
    return torch.cat([q_r, q[..., r:]], -1), torch.cat([k_r, k[..., r:]], -1)


def scored(self, config, q, k, v, attention_mask, position_embeddings, in_v_dtype=False):
    """Rotate q, k (batch, head, n, d) and attend in float32 as GPT-J and CodeGen do:
    (context (batch, n, head * d) in v's dtype, probs). ``in_v_dtype``: the rotated q and k
    are rounded to v's dtype first (CodeGen from transformers 5.24)."""
    q, k = rotated(q, k, *position_embeddings)
    if in_v_dtype:
        q, k = q.to(v.dtype), k.to(v.dtype)
    function = interface_function(config)
    context, probs = function(self, q.float(), k.float(), v, attention_mask, scaling=scaling(self))
    return context.flatten(2), probs  # both in v's dtype, as GPT-J rounds its probabilities


def routed_forward(self, config, hidden_states, layer_past=None, attention_mask=None,
                   position_ids=None, use_cache=False, output_attentions=False,
                   position_embeddings=None, **_kwargs):  # fmt: skip
    """``GPTJAttention.forward`` (no cache) with the interface in place of ``_attn``."""
    batch, n, _ = hidden_states.shape
    q, k, v = (
        proj(hidden_states).view(batch, n, self.num_attention_heads, -1).transpose(1, 2)
        for proj in (self.q_proj, self.k_proj, self.v_proj)
    )  # (batch, head, n, d)
    context, probs = scored(self, config, q, k, v, attention_mask, position_embeddings)
    return self.resid_dropout(self.out_proj(context)), probs


ADAPTER = Adapter(
    "GPTJAttention", routed_forward, table_positions(lambda m: m.q_proj.weight.dtype), rotate
)
