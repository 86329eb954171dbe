"""CodeGen: an adapter, as GPT-J (same rotation of adjacent pairs, same float32 scores
scaled by 1 / sqrt(d)), with CodeGen's fused ``qkv_proj``: four model-parallel slices,
each holding q, v and k (in that order) of a quarter of the heads.
"""

from __future__ import annotations

import torch

from attnreport.models.families.adapter import Adapter, from_position_ids
from attnreport.models.families.gptj import rotate, scored

MP_NUM = 4  # CodeGen's model-parallel slices of qkv_proj


def positions(module, position_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(cos, sin), each (batch, n, rotary_dim), of the module's sinusoid table (sin | cos),
    in the table's dtype as CodeGen reads it."""
    sincos = module.embed_positions.to(position_ids.device)[position_ids]
    sin, cos = torch.split(sincos, sincos.shape[-1] // 2, dim=-1)
    return cos.repeat_interleave(2, -1), sin.repeat_interleave(2, -1)


def routed_forward(self, config, hidden_states, layer_past=None, attention_mask=None,
                   position_ids=None, use_cache=False, output_attentions=False,
                   position_embeddings=None, **_kwargs):  # fmt: skip
    """``CodeGenAttention.forward`` (no cache) with the interface in place of ``_attn``."""
    qkv = self.qkv_proj(hidden_states)
    qkv = qkv.reshape(qkv.shape[:-1] + (MP_NUM, -1))
    local_dim = self.head_dim * self.num_attention_heads // MP_NUM
    q, v, k = (
        self._split_heads(t, self.num_attention_heads, self.head_dim, mp_num=MP_NUM).transpose(1, 2)
        for t in torch.split(qkv, local_dim, dim=-1)
    )  # (batch, head, n, d)
    context, probs = scored(self, config, q, k, v, attention_mask, position_embeddings)
    return self.resid_dropout(self.out_proj(context)), probs


ADAPTER = Adapter("CodeGenAttention", routed_forward, from_position_ids(positions), rotate)
