"""CodeGen: an adapter, as GPT-J (same rotation of adjacent pairs, same float32 scores
scaled by 1 / sqrt(d)), with CodeGen's fused ``qkv_proj``: four model-parallel slices,
each holding q, v and k (in that order) of a quarter of the heads.
"""

from __future__ import annotations

import torch

from attnreport.models.families.adapter import Adapter
from attnreport.models.families.gptj import hands_positions, rotate, scored, table_positions

MP_NUM = 4  # CodeGen's model-parallel slices of qkv_proj


def routed_forward(self, config, hidden_states, layer_past=None, attention_mask=None,
                   position_ids=None, use_cache=False, output_attentions=False,
                   position_embeddings=None, **_kwargs):  # fmt: skip
    """``CodeGenAttention.forward`` (no cache) with the interface in place of ``_attn``."""
    qkv = self.qkv_proj(hidden_states)
    qkv = qkv.reshape(qkv.shape[:-1] + (MP_NUM, -1))
    local_dim = self.head_dim * self.num_attention_heads // MP_NUM
    q, v, k = (  # each slice's quarter of the heads, in order (CodeGen's own _split_heads)
        t.reshape(*t.shape[:2], -1, self.head_dim).transpose(1, 2)
        for t in torch.split(qkv, local_dim, dim=-1)
    )  # (batch, head, n, d)
    newer = hands_positions(self)  # transformers 5.24 on: it also rounds q, k to v's dtype
    context, probs = scored(self, config, q, k, v, attention_mask, position_embeddings, newer)
    return self.resid_dropout(self.out_proj(context)), probs


ADAPTER = Adapter("CodeGenAttention", routed_forward, table_positions(), rotate)  # table's dtype
