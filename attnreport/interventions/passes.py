"""One pass with one layer's attention changed, and what it showed.

The change is applied inside our attention function (``attnreport.interface.tapped``),
to q and k exactly as the model scores them (after QK-norm and the rotary transform) and
to v; the model's own code runs everything before and after, for every architecture.
A kind's hooks (``kinds.Change.hooks``) reach further (the rotary angles, another module).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass

import torch
from torch import nn

from attnreport.capture import LayerTap, Slots, forward_logits, instrumented
from attnreport.interface import NAME
from attnreport.interventions.kinds import Modifier, identity
from attnreport.models.layout import LayerSpec, find_blocks
from attnreport.models.placement import swapped_forward
from attnreport.next_token import check_head, final_hidden
from attnreport.next_token import next_token_kl as blockwise_kl
from attnreport.streaming import STREAM_NAME

__all__ = ["identity"]  # re-exported: the unmodified pass


@dataclass(frozen=True)
class Outcome:
    """What one (possibly modified) pass showed.

    A pass over more than ``leading`` tokens (a long input) observes only the first
    ``leading`` queries (over keys 0..leading-1, all that a causal query among them may
    see) and keeps the final hidden states instead of the (query, vocab) log-probabilities.
    """

    probs: dict[int, torch.Tensor]  # observed layer -> (head, query, key), query < leading
    log_probs: torch.Tensor | None  # (query, vocab) next-token log-distribution; None if long
    prefix: tuple[object, ...] = ()  # output of the block before the intervention layer
    hidden: torch.Tensor | None = None  # (query, hidden) final hidden states of a long pass

    def kept(self) -> Outcome:
        """The observed probabilities only: what a grid keeps of a pass once its KL is known."""
        return Outcome(self.probs, None)


@contextmanager
def replayed_blocks(blocks: list[nn.Module], outputs: tuple[object, ...]) -> Iterator[None]:
    """Make the blocks before the intervention layer return the recorded output of the
    last of them instead of recomputing anything.

    Blocks before the intervention layer see the same input in every pass of a grid, so
    replaying the unmodified pass's output gives the same numbers without the work. Only
    the last block's output is kept (``outputs`` holds it alone): every replayed block
    returns it, and the first block that runs reads it. The instance attribute shadows
    the class's ``forward`` (or accelerate's wrapper of it, which then does not load an
    offloaded block's weights either) and is always undone.
    """
    with ExitStack() as stack:
        for block in blocks if outputs else ():
            stack.enter_context(swapped_forward(block, _constant(outputs[-1])))
        yield


def _constant(output: object) -> Callable[..., object]:
    return lambda *args, **kwargs: output


def _record_last_output(blocks: list[nn.Module], sink: list[object]) -> list:
    def hook(_module, _args, output):
        sink[:] = [output]  # only the last block's output is needed to replay the prefix

    return [(block, "post", hook) for block in blocks]


def run_modified(
    model: nn.Module,
    specs: list[LayerSpec],
    input_ids: torch.Tensor,
    layer: int,
    modify: Modifier,
    observe: tuple[int, ...],
    prefix: tuple[object, ...] = (),
    leading: int | None = None,
    extra_hooks: list | None = None,
) -> Outcome:
    """One forward pass with ``modify`` applied at ``layer``; probabilities at ``observe``.

    ``layer`` and ``observe`` are block numbers of attention layers; ``observe`` must not
    precede ``layer``. Pass the ``prefix`` of an unmodified pass on the same input to replay
    the blocks before ``layer`` (every block, attention or not); without it the pass records
    one.
    An input longer than ``leading`` tokens runs through the blockwise attention
    (``attnreport.streaming``): nothing n x n and no (query, vocab) logits are kept.
    """
    blocks = find_blocks(model)  # a hybrid's blocks without attention too
    slots = {i: Slots() for i in sorted(set(observe) | {layer})}
    tap = LayerTap(specs, slots)
    tap.modifiers[layer] = modify
    long = leading is not None and input_ids.shape[0] > leading
    tap.leading_rows = leading if long else 0
    recorded: list[object] = []
    hidden: list[torch.Tensor] = []
    hooks = [] if prefix else _record_last_output(blocks[:layer], recorded)
    hooks = hooks + list(extra_hooks or [])
    name = STREAM_NAME if long else NAME
    with ExitStack() as stack:
        stack.enter_context(replayed_blocks(blocks[:layer], prefix))
        stack.enter_context(instrumented(model, specs, tap, hooks, name))
        if long:
            stack.enter_context(final_hidden(model, hidden))
        logits = forward_logits(model, input_ids, 1 if long else 0)
    prefix = prefix or tuple(recorded)
    if long:
        check_head(model, hidden[0], logits[-1])
        probs = {i: slots[i].computed.leading_probs for i in observe}
        return Outcome(probs, None, prefix, hidden[0])
    probs = {i: slots[i].computed.probs for i in observe}
    return Outcome(probs, torch.log_softmax(logits.float(), dim=-1), prefix)


def outcome_kl(model: nn.Module, base: Outcome, changed: Outcome) -> torch.Tensor:
    """KL(p_base || p_changed) of the next-token distribution at each position (query,)."""
    if base.log_probs is not None and changed.log_probs is not None:
        return next_token_kl(base.log_probs, changed.log_probs)
    return blockwise_kl(model, base.hidden, changed.hidden)


def next_token_kl(base: torch.Tensor, changed: torch.Tensor) -> torch.Tensor:
    """KL(p_base || p_changed) of the next-token distribution at each position, in nats (query,)."""
    return (base.exp() * (base - changed)).sum(-1).clamp_min(0.0)


def observed_layers(layer: int, layers: Sequence[int]) -> dict[str, int]:
    """The same layer, the next attention layer (the same when it is the last) and the last
    one; ``layers``: the block numbers of the attention layers (``attention_layers``)."""
    after = [i for i in layers if i > layer]
    return {"same": layer, "next": after[0] if after else layer, "last": max(layers[-1], layer)}
