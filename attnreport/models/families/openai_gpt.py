"""GPT-1 (``openai-gpt``): an adapter, because its attention computes softmax(q.k) inline.

The routed forward splits the fused ``c_attn`` output as the model does, scores with the
scaling it uses (1 / sqrt(d)) under its causal buffer, and applies its own ``c_proj``.
The model blocks keys with -1e4 where we use the dtype's minimum: both give exactly 0.
"""

from __future__ import annotations

from attnreport.models.families.adapter import Adapter, interface_function, mask_for


def routed_forward(self, config, x, attention_mask=None, output_attentions=False):
    """GPT-1's ``Attention.forward`` with the interface in place of ``_attn``."""
    function = interface_function(config)
    batch, n, _ = x.shape
    q, k, v = (
        t.view(batch, n, self.n_head, -1).transpose(1, 2)
        for t in self.c_attn(x).split(self.split_size, dim=2)
    )  # (batch, head, n, d)
    mask = mask_for(function, self.bias[0, 0, :n, :n].bool(), q.dtype, attention_mask)
    scaling = v.size(-1) ** -0.5 if self.scale else 1.0
    context, probs = function(self, q, k, v, mask, scaling=scaling)
    out = self.resid_dropout(self.c_proj(context.reshape(batch, n, -1)))
    return [out, probs] if output_attentions else [out]


ADAPTER = Adapter("Attention", routed_forward)
