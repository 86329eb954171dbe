"""BLOOM (ALiBi): an adapter, because BLOOM's attention does not call the interface.

While ``adapted`` is active each ``BloomAttention`` runs ``routed_forward``: BLOOM's
own forward up to the scores, with the attention itself handed to our interface
function, the ALiBi tensor passed as ``score_bias`` (added in the same fused
``baddbmm`` BLOOM uses). The projection, the output ``dense`` and the residual add are
BLOOM's own modules and ops. Refused: ``pretraining_tp > 1`` with ``slow_but_exact``
(a sliced output projection that is not one linear map per call).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass
from functools import partial

from torch import nn

from attnreport.errors import AttnReportError
from attnreport.interface import attention
from attnreport.models.placement import swapped_forward


def routed_forward(self, config, hidden_states, residual, alibi, attention_mask, **_kwargs):
    """BLOOM's attention forward (no cache) with the interface in place of its inline math:
    the function registered under the name ``config`` routes to (``interface.attention``,
    or the blockwise one of ``attnreport.streaming`` for long inputs)."""
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS
    from transformers.models.bloom.modeling_bloom import dropout_add

    function = ALL_ATTENTION_FUNCTIONS.get(config._attn_implementation, attention)

    batch, n, _ = hidden_states.shape
    fused = self.query_key_value(hidden_states).view(batch, n, self.num_heads, 3, self.head_dim)
    q, k, v = (fused[..., i, :].transpose(1, 2) for i in range(3))  # (batch, head, n, d)
    context, probs = function(
        self, q, k, v, attention_mask, scaling=self.inv_norm_factor,
        score_bias=alibi.view(batch, self.num_heads, 1, -1),
    )  # fmt: skip
    output = self.dense(context.reshape(batch, n, -1))
    return dropout_add(output, residual, self.hidden_dropout, self.training), probs


@contextmanager
def _bloom_routed(model: nn.Module) -> Iterator[None]:
    modules = [m for m in model.modules() if type(m).__name__ == "BloomAttention"]
    if any(m.pretraining_tp > 1 and m.slow_but_exact for m in modules):
        raise AttnReportError("BLOOM with pretraining_tp > 1 and slow_but_exact is not supported")
    with ExitStack() as stack:
        for module in modules:
            stack.enter_context(
                swapped_forward(module, partial(routed_forward, module, model.config))
            )
        yield


@dataclass(frozen=True)
class BloomAdapter:
    """BLOOM's ``ADAPTER``: ``routed_forward`` on each ``BloomAttention`` while adapted."""

    rotate: None = None  # ALiBi: nothing rotates q and k
    output: None = None  # its dense layer is the one output projection
    reported: None = None  # it reports our heads

    def adapted(self, model: nn.Module) -> AbstractContextManager[None]:
        return _bloom_routed(model)


ADAPTER = BloomAdapter()
