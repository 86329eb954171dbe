"""Llama 4 (text): an adapter, because its layers are handed the rotation as one complex
tensor (``freqs_cis``) that multiplies q and k viewed as complex pairs.

That product is the rotation of adjacent pairs (GPT-J's): while adapted each
``Llama4TextAttention`` is handed (cos, sin) = (real, imaginary parts, repeated per pair)
and runs ``routed_forward``, the model's forward with that rotation (in float32, cast
back, as the model's complex product is), then its L2 QK-norm, its temperature tuning of
q on the layers without positions, and its own ``o_proj``.
"""

from __future__ import annotations

import torch

from attnreport.models.families.adapter import Adapter, interface_function
from attnreport.models.families.gptj import rotate as rotate_pairs


def positions(module, kwargs) -> tuple[torch.Tensor, torch.Tensor] | None:
    """(cos, sin), each (batch, n, d), of the complex ``freqs_cis`` (batch, n, d / 2)."""
    freqs = kwargs.get("position_embeddings")
    if not (isinstance(freqs, torch.Tensor) and freqs.is_complex()):
        return None
    return freqs.real.repeat_interleave(2, -1), freqs.imag.repeat_interleave(2, -1)


def rotate(q, k, cos, sin):
    """The complex product of Llama 4's ``apply_rotary_emb`` on q, k (batch, head, n, d)."""
    q_r, k_r = rotate_pairs(q.float(), k.float(), cos.float(), sin.float())
    return q_r.type_as(q), k_r.type_as(k)


def _tuned(self, q: torch.Tensor) -> torch.Tensor:
    """q (batch, head, n, d) with Llama 4's temperature tuning of position-free layers."""
    if not (self.attn_temperature_tuning and not self.use_rope):
        return q
    n = q.shape[2]
    at = torch.arange(n, device=q.device).float()
    scales = torch.log1p(torch.floor((at + 1.0) / self.floor_scale)) * self.attn_scale + 1.0
    return (q * scales.view(1, 1, n, 1)).to(q.dtype)


def routed_forward(self, config, hidden_states, position_embeddings, attention_mask,
                   past_key_values=None, **kwargs):  # fmt: skip
    """``Llama4TextAttention.forward`` (no cache) with the rotation as (cos, sin)."""
    shape = (*hidden_states.shape[:-1], -1, self.head_dim)
    q, k, v = (
        proj(hidden_states).view(shape).transpose(1, 2)
        for proj in (self.q_proj, self.k_proj, self.v_proj)
    )  # (batch, head, n, d)
    if self.use_rope:
        q, k = rotate(q, k, *position_embeddings)
    if hasattr(self, "qk_norm"):
        q, k = self.qk_norm(q), self.qk_norm(k)
    context, probs = interface_function(config)(
        self, _tuned(self, q), k, v, attention_mask, scaling=self.scaling, **kwargs
    )
    return self.o_proj(context.reshape(*hidden_states.shape[:-1], -1).contiguous()), probs


ADAPTER = Adapter("Llama4TextAttention", routed_forward, positions, rotate)
