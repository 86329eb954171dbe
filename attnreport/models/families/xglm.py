"""XGLM: an adapter, because its attention computes softmax(q.k) inline.

The routed forward scales q before scoring, as XGLM does (so q as scored includes the
1 / sqrt(d) and the function's scaling is 1), with the mask the model passes (built by
the mask function registered with our attention function).
"""

from __future__ import annotations

from attnreport.models.families.adapter import Adapter, interface_function


def routed_forward(self, config, hidden_states, key_value_states=None, past_key_values=None,
                   attention_mask=None, **_kwargs):  # fmt: skip
    """``XGLMAttention.forward`` (self-attention, no cache) with the interface in place of
    its inline softmax."""
    function = interface_function(config)
    batch, n, _ = hidden_states.shape
    q = self.q_proj(hidden_states) * self.scaling
    q, k, v = (
        t.view(batch, n, self.num_heads, self.head_dim).transpose(1, 2)
        for t in (q, self.k_proj(hidden_states), self.v_proj(hidden_states))
    )  # (batch, head, n, d)
    context, probs = function(self, q, k, v, attention_mask, scaling=1.0)
    return self.out_proj(context.reshape(batch, n, self.embed_dim)), probs


ADAPTER = Adapter("XGLMAttention", routed_forward)
