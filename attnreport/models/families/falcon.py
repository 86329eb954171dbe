"""Falcon: an adapter, because its eager attention computes softmax(q.k) inline.

The routed forward splits the fused ``query_key_value`` with Falcon's own
``_split_heads`` (multi-query, grouped or per-head layouts), rotates q and k with the
(cos, sin) the model hands the module, scores with 1 / sqrt(d) under the mask the model
passes, and applies its own ``dense``. ALiBi Falcons add the bias before the scaling;
here it is passed scaled as ``score_bias`` (the same logits up to rounding).
"""

from __future__ import annotations

import sys

from attnreport.models.families.adapter import Adapter, interface_function


def routed_forward(self, config, hidden_states, alibi, attention_mask, position_ids=None,
                   layer_past=None, use_cache=False, output_attentions=False,
                   position_embeddings=None, **_kwargs):  # fmt: skip
    """``FalconAttention.forward`` (no cache) with the interface in place of its inline
    softmax."""
    function = interface_function(config)
    q, k, v = self._split_heads(self.query_key_value(hidden_states))  # (batch, n, head, d)
    batch, n = q.shape[:2]
    q, k, v = (t.transpose(1, 2) for t in (q, k, v))  # (batch, head, n, d)
    bias = None
    if alibi is None:
        rotary = sys.modules[type(self).__module__].apply_rotary_pos_emb
        q, k = rotary(q, k, *position_embeddings)
    else:
        bias = alibi.view(batch, self.num_heads, 1, -1) * self.inv_norm_factor
    context, probs = function(
        self, q, k, v, attention_mask, scaling=self.head_dim**-0.5, score_bias=bias
    )
    return self.dense(context.reshape(batch, n, self.num_heads * self.head_dim)), probs


ADAPTER = Adapter("FalconAttention", routed_forward)
