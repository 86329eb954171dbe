"""GPT-J: an adapter, because its attention computes softmax(q.k) inline and rotates q and
k itself (pairs of adjacent dims, the first ``rotary_dim`` of each head).

While adapted each ``GPTJAttention`` is handed the (cos, sin) its sinusoid table gives for
the position ids (``positions``, repeated per pair, in the model's dtype) and runs
``routed_forward``: the same rotation (``rotate``: the model's elementwise ops, so the
same numbers), scores in float32 scaled by 1 / sqrt(d) as GPT-J does, under the mask the
model passes, and its own ``out_proj``. CodeGen uses the same rotation.
"""

from __future__ import annotations

import torch

from attnreport.models.families.adapter import Adapter, from_position_ids, interface_function


def rotate_every_two(x: torch.Tensor) -> torch.Tensor:
    """(..., r) -> (..., r): each pair (x1, x2) of adjacent dims to (-x2, x1)."""
    return torch.stack((-x[..., 1::2], x[..., ::2]), dim=-1).flatten(-2)


def rotate(q, k, cos, sin):
    """q (batch, head, n, r), k alike; cos, sin (batch, n, r): GPT-J's ``apply_rotary_pos_emb``."""
    cos, sin = cos[:, None], sin[:, None]
    return q * cos + rotate_every_two(q) * sin, k * cos + rotate_every_two(k) * sin


def positions(module, position_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(cos, sin), each (batch, n, rotary_dim), of the module's sinusoid table (sin | cos)."""
    table = module.embed_positions.to(position_ids.device)[position_ids]
    sincos = table.to(module.q_proj.weight.dtype)
    sin, cos = torch.split(sincos, sincos.shape[-1] // 2, dim=-1)
    return cos.repeat_interleave(2, -1), sin.repeat_interleave(2, -1)


def rotated(q, k, cos, sin):
    """``rotate`` on the first ``r = cos.shape[-1]`` dims of q and k (the rest passed)."""
    r = cos.shape[-1]
    q_r, k_r = rotate(q[..., :r], k[..., :r], cos, sin)
    return torch.cat([q_r, q[..., r:]], -1), torch.cat([k_r, k[..., r:]], -1)


def scored(self, config, q, k, v, attention_mask, position_embeddings):
    """Rotate q, k (batch, head, n, d) and attend in float32 as GPT-J and CodeGen do:
    (context (batch, n, head * d) in v's dtype, probs)."""
    q, k = rotated(q, k, *position_embeddings)
    function = interface_function(config)
    context, probs = function(
        self, q.float(), k.float(), v, attention_mask, scaling=1.0 / float(self.scale_attn)
    )
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


ADAPTER = Adapter("GPTJAttention", routed_forward, from_position_ids(positions), rotate)
