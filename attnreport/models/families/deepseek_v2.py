"""DeepSeek V2: an adapter, because its layers are handed the rotation as one complex tensor
(``freqs_cis``), as Llama 4's are, that turns adjacent pairs of the rotary part of q and k.

Multi-head latent attention: q and k are [plain dims | rotated dims], v of its own width.
While adapted each ``DeepseekV2Attention`` is handed (cos, sin) = (real, imaginary parts,
repeated per pair) (Llama 4's ``positions``) and runs ``routed_forward``: the model's
forward with that rotation on the rotated dims (in float32, cast back, as the model's
complex product is), its own ``expand_kv`` and ``o_proj``.
"""

from __future__ import annotations

import torch

from attnreport.models.families.adapter import Adapter, interface_function
from attnreport.models.families.llama4 import positions, rotate


def _query(self, hidden_states: torch.Tensor) -> torch.Tensor:
    """(batch, head, n, qk_head_dim): q as the model projects it (with or without q LoRA)."""
    if self.q_lora_rank is None:
        q = self.q_proj(hidden_states)
    else:
        q = self.q_b_proj(self.q_a_layernorm(self.q_a_proj(hidden_states)))
    return q.view(*hidden_states.shape[:-1], -1, self.qk_head_dim).transpose(1, 2)


def routed_forward(self, config, hidden_states, attention_mask=None, past_key_values=None,
                   position_embeddings=None, **kwargs):  # fmt: skip
    """``DeepseekV2Attention.forward`` (no cache) with the rotation as (cos, sin)."""
    batch, n = hidden_states.shape[:-1]
    q_nope, q_pe = torch.split(
        _query(self, hidden_states), [self.qk_nope_head_dim, self.qk_rope_head_dim], dim=-1
    )
    compressed = self.kv_a_proj_with_mqa(hidden_states)
    kv_nope, k_pe = torch.split(compressed, [self.kv_lora_rank, self.qk_rope_head_dim], dim=-1)
    k_nope = self.kv_a_layernorm(kv_nope).view(batch, 1, n, self.kv_lora_rank)
    k_pe = k_pe.view(batch, 1, n, self.qk_rope_head_dim)
    q_pe, k_pe = rotate(q_pe, k_pe, *position_embeddings)
    key, value = self.expand_kv(k_nope, k_pe)
    context, probs = interface_function(config)(
        self, torch.cat((q_nope, q_pe), dim=-1), key, value, attention_mask,
        scaling=self.scaling,
    )  # fmt: skip
    return self.o_proj(context.reshape(batch, n, -1).contiguous()), probs


ADAPTER = Adapter("DeepseekV2Attention", routed_forward, positions, rotate)
