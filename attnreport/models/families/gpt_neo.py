"""GPT-Neo: an adapter, because its attention computes softmax(q.k) inline.

``GPTNeoAttention`` wraps one ``GPTNeoSelfAttention``; the routed forward replaces the
wrapper's, with the inner module's projections: no scaling (GPT-Neo scores q.k as it
is), in float32 as the model does, under its causal buffer (which, on ``local`` layers,
also keeps only the last ``window_size`` keys: passed as the sliding window).
"""

from __future__ import annotations

import torch

from attnreport.models.families.adapter import Adapter, interface_function, mask_for


def routed_forward(self, config, hidden_states, layer_past=None, attention_mask=None,
                   use_cache=False, output_attentions=False, **_kwargs):  # fmt: skip
    """``GPTNeoAttention.forward`` (no cache) with the interface in place of ``_attn``."""
    inner = self.attention
    function = interface_function(config)
    batch, n, _ = hidden_states.shape
    q, k, v = (
        proj(hidden_states).view(batch, n, inner.num_heads, inner.head_dim).transpose(1, 2)
        for proj in (inner.q_proj, inner.k_proj, inner.v_proj)
    )  # (batch, head, n, d)
    q, k = q.to(torch.float32), k.to(torch.float32)  # probabilities are rounded to v's dtype
    mask = mask_for(function, inner.bias[0, 0, :n, :n], q.dtype, attention_mask)
    window = config.window_size if inner.attention_type == "local" else None
    context, probs = function(self, q, k, v, mask, scaling=1.0, sliding_window=window)
    return inner.resid_dropout(inner.out_proj(context.reshape(batch, n, -1))), probs


ADAPTER = Adapter("GPTNeoAttention", routed_forward)
