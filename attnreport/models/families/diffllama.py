"""DiffLlama: an adapter, because differential attention calls the interface twice per layer
and subtracts one head's output from another's before one RMS norm and ``o_proj``.

What the model computes: every query head h has one softmax map p_h (both of its calls
score the same q and k) and reads a value of twice the head width, v'_h = [v1 | v2]
(the two halves of the kv heads, each repeated). Head j of the first half and head
j + H/2 of the second form differential head j: y_j = p_j v'_j - lambda p_(j+H/2) v'_(j+H/2),
normed, y_j (1 - lambda_init) / rms(y_j), and projected by o_proj's columns of j.

Here a head is a query head with its own map, as the model reports them: one interface
call with v' (so value width 2d) and, for each head, the update
u_h = c_h W_O,j (s_j z_h) with z_h = p_h v'_h, c_h = 1 (first half) or -lambda (second
half) and s_j = (1 - lambda_init) / rms(y_j) the token's gate of its differential head
(the same for both of its heads). The updates sum to the model's block output; c_h is
part of the (composed) output projection, s_j of the gated output.
"""

from __future__ import annotations

import sys

import torch
from torch import nn

from attnreport.models.families.adapter import Adapter, interface_function
from attnreport.models.families.composed import ComposedLinear, composed_for


def lambda_full(attention: nn.Module, dtype: torch.dtype) -> torch.Tensor:
    """The layer's learned lambda (a 0-dim tensor in ``dtype``), as the model computes it."""
    a = attention

    def product(q, k):
        return torch.exp(torch.sum(q * k, dim=-1, dtype=torch.float32)).to(dtype)

    return product(a.lambda_q1, a.lambda_k1) - product(a.lambda_q2, a.lambda_k2) + a.lambda_init


def _output(attention: nn.Module) -> ComposedLinear:
    """(model, H * 2d) weight: head h's columns are c_h times o_proj's columns of its
    differential head (h mod H/2); o_proj's bias."""
    proj = attention.o_proj

    def weight() -> torch.Tensor:
        w = proj.weight  # (model, H/2 * 2d)
        pairs = w.view(w.shape[0], -1, 2 * attention.head_dim)  # (model, H/2, 2d)
        lam = lambda_full(attention, w.dtype)
        c = torch.cat([torch.ones_like(lam).expand(pairs.shape[1]), -lam.expand(pairs.shape[1])])
        return (pairs.repeat(1, 2, 1) * c[None, :, None]).reshape(w.shape[0], -1)

    return ComposedLinear(weight, lambda: proj.bias, folded=(attention.groupnorm,))


output = composed_for(_output)


def _gate(self, context: torch.Tensor, lam: torch.Tensor) -> torch.Tensor:
    """(batch, n, H, 1): s_j of each head's differential head, from ``context`` (batch, n, H, 2d)."""
    first, second = torch.chunk(context, 2, dim=2)
    differential = first - lam * second  # (batch, n, H/2, 2d)
    eps = self.groupnorm.eps or torch.finfo(context.dtype).eps
    rms = torch.rsqrt(differential.pow(2).mean(-1, keepdim=True) + eps)
    return ((1 - self.lambda_init) * rms).repeat(1, 1, 2, 1)


def routed_forward(self, config, hidden_states, position_embeddings=None, attention_mask=None,
                   past_key_values=None, **kwargs):  # fmt: skip
    """``DiffLlamaAttention.forward`` (no cache) with one interface call over v' = [v1 | v2]
    and the composed output projection of the gated output (``output``)."""
    batch, n, _ = hidden_states.shape
    shape = (batch, n, -1, self.head_dim)
    q, k, v = (
        p(hidden_states).view(shape).transpose(1, 2)
        for p in (self.q_proj, self.k_proj, self.v_proj)
    )
    rotary = sys.modules[type(self).__module__].apply_rotary_pos_emb
    q, k = rotary(q, k, *position_embeddings)
    halves = (t.repeat(1, 2, 1, 1) for t in torch.chunk(v, 2, dim=1))
    v_wide = torch.cat(list(halves), dim=-1)  # (batch, kv_head, n, 2d)
    context, probs = interface_function(config)(
        self, q, k, v_wide, attention_mask, scaling=self.scaling
    )  # context (batch, n, H, 2d)
    gated = context * _gate(self, context, lambda_full(self, q.dtype))
    return output(self)(gated.reshape(batch, n, -1)), probs


ADAPTER = Adapter("DiffLlamaAttention", routed_forward, output=output)
