"""JetMoE: an adapter, because its attention is a mixture of experts (MoA) with no one output
projection: each token is routed to ``top_k`` of ``E`` experts, each expert has its own
query projection W_q,e and output projection W_O,e, keys and values are shared, and the
model attends once per routing slot (``top_k x kv_head`` heads whose query expert changes
from token to token).

Here a head is (kv head h, expert e): ``E x kv_head`` heads, ordered h-major so that the
``E`` heads of kv head h share its key and value (GQA). While adapted each
``JetMoeAttention`` computes every expert's queries, attends once, and gates each head's
output by the token's routing weight of its expert (0 where the expert is not routed):
u_(h,e) = W_O,e,h (g_e z_(h,e)). Their sum, plus the MoA's bias, is the block output the
model computes slot by slot. A head's probabilities at a token where its expert is not
routed are the map that expert would attend with; its update there is zero. The model's
own ``output_attentions`` reports the routed slots; ``reported`` lays ours out so.
"""

from __future__ import annotations

import sys

import torch
from torch import nn

from attnreport.models.families.adapter import Adapter, interface_function
from attnreport.models.families.composed import ComposedLinear, composed_for


def routing(
    moa: nn.Module, hidden: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(experts (token, top_k), gates (token, E) in ``hidden``'s dtype, router logits) of
    ``JetMoeTopKGating`` for ``hidden`` (token, model): the same ops as the model's router."""
    logits = moa.router.layer(hidden).float()
    top_logits, top = logits.topk(moa.top_k, dim=1)
    top_gates = torch.softmax(top_logits, dim=1).type_as(hidden)
    gates = torch.zeros(hidden.shape[0], moa.num_experts, dtype=hidden.dtype, device=hidden.device)
    return top, gates.scatter(1, top, top_gates), logits


def _output(attention: nn.Module) -> ComposedLinear:
    """(model, kv_head * E * d) weight: column block (h, e) is W_O,e's columns of kv head h."""
    moa, heads, d = attention.experts, attention.num_key_value_heads, attention.head_dim

    def weight() -> torch.Tensor:
        w = moa.output_linear.weight  # (E, model, kv_head * d)
        per = w.view(w.shape[0], w.shape[1], heads, d).permute(1, 2, 0, 3)  # (model, h, E, d)
        return per.reshape(w.shape[1], -1)

    return ComposedLinear(weight, lambda: moa.bias)


output = composed_for(_output)


def routed_forward(self, config, hidden_states, attention_mask=None, position_embeddings=None,
                   past_key_values=None, **kwargs):  # fmt: skip
    """``JetMoeAttention.forward`` (no cache): every expert's query, one interface call over
    the (kv head, expert) heads, each head's output gated by its expert's routing weight,
    then the composed output projection (``output``). Returns what the model's does."""
    batch, n, _ = hidden_states.shape
    moa, heads, d = self.experts, self.num_key_value_heads, self.head_dim
    top, gates, logits = routing(moa, hidden_states.reshape(batch * n, -1))
    q = torch.stack(
        [nn.functional.linear(hidden_states, w) for w in moa.input_linear.weight], dim=2
    )  # (batch, n, E, kv_head * d)
    q = q.view(batch, n, -1, heads, d).permute(0, 3, 2, 1, 4).reshape(batch, -1, n, d)
    k, v = (
        t.view(batch, n, heads, d).transpose(1, 2) for t in self.kv_proj(hidden_states).chunk(2, -1)
    )
    rotary = sys.modules[type(self).__module__].apply_rotary_pos_emb
    q, k = rotary(q, k, *position_embeddings)
    context, probs = interface_function(config)(
        self, q, k, v, attention_mask, scaling=self.scaling
    )  # context (batch, n, kv_head * E, d)
    gated = context.view(batch, n, heads, -1, d) * gates.view(batch, n, 1, -1, 1)
    out = output(self)(gated.reshape(batch, n, -1))
    return out, probs, logits


def reported(spec, record) -> torch.Tensor:
    """Our (kv_head * E, query, key) probabilities as the model reports them: (slot, kv head)
    heads, slot k of query i being the head of its k-th routed expert."""
    moa = spec.attention.experts
    weight = moa.router.layer.weight
    top, _, _ = routing(moa, record.a.to(weight.device, weight.dtype))  # (query, top_k)
    heads, experts, n = spec.layout.n_kv_heads, moa.num_experts, record.probs.shape[1]
    h = torch.arange(heads, device=top.device)
    index = (h[None, :, None] * experts + top.t()[:, None, :]).reshape(-1, n)  # (slot * h, query)
    return record.probs[index.cpu(), torch.arange(n)[None, :]]


ADAPTER = Adapter("JetMoeAttention", routed_forward, output=output, reported=reported)
