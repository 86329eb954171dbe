"""RecurrentGemma: an adapter, because its attention layers compute their rotation from
the position ids inside their own code (``self.rotary_emb``) instead of being handed it.

While adapted each ``RecurrentGemmaAttention`` is handed the (cos, sin) its own rotary
module gives for the position ids (``positions``) and runs ``routed_forward``: the
model's forward with those (cos, sin) in place of its own call, so discovery can rerun
it with an identity rotation and capture can undo the model's ``apply_rotary_pos_emb``.
Its recurrent blocks are not attention (a hybrid: only the attention layers are found).
"""

from __future__ import annotations

import sys

import torch

from attnreport.models.families.adapter import Adapter, from_position_ids, interface_function


def positions(module, position_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(cos, sin), each (batch, n, rotary dims), as the module's ``rotary_emb`` gives them."""
    return module.rotary_emb(module.v_proj.weight, position_ids)


def routed_forward(self, config, hidden_states, position_ids=None, attention_mask=None,
                   past_key_values=None, position_embeddings=None, **kwargs):  # fmt: skip
    """``RecurrentGemmaAttention.forward`` (no cache) rotating with ``position_embeddings``."""
    shape = (*hidden_states.shape[:-1], -1, self.head_dim)
    q, k, v = (
        proj(hidden_states).view(shape).transpose(1, 2)
        for proj in (self.q_proj, self.k_proj, self.v_proj)
    )  # (batch, head, n, d)
    if position_embeddings is None:
        position_embeddings = positions(self, position_ids)
    rotate = sys.modules[type(self).__module__].apply_rotary_pos_emb
    q, k = rotate(q, k, *position_embeddings)
    context, probs = interface_function(config)(
        self, q, k, v, attention_mask, scaling=self.scaling,
        sliding_window=self.sliding_window, **kwargs,
    )  # fmt: skip
    return self.o_proj(context.reshape(*hidden_states.shape[:-1], -1).contiguous()), probs


ADAPTER = Adapter("RecurrentGemmaAttention", routed_forward, positions=from_position_ids(positions))
