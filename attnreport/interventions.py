"""Interventions: real forward passes with q, k or v of every head of one layer changed.

The change is applied inside our attention function (``attnreport.interface``), to
q and k exactly as the model scores them (after QK-norm and the rotary transform) and
to v; the model's own code runs everything before and after, for every architecture.

Scaling q (or k) by a small epsilon tempers the logits towards uniform attention over
each query's allowed keys (and the learned sink, where the model has one); for ALiBi
models the ALiBi bias is not scaled, so attention tends to the ALiBi pattern instead.
Scaling v leaves this layer's probabilities unchanged by construction; its effect
shows in later layers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass

import torch
from torch import nn

from attnreport.capture import LayerTap, Slots, forward_logits, instrumented
from attnreport.models.layout import LayerSpec
from attnreport.models.placement import swapped_forward

QKV = tuple[torch.Tensor, torch.Tensor, torch.Tensor]
Modifier = Callable[[QKV], QKV]
TARGETS = ("Q", "K", "V")


def scale(target: str, epsilon: float) -> Modifier:
    """Multiply q, k or v (every head, every position) by ``epsilon``."""
    index = TARGETS.index(target)

    def modify(qkv: QKV) -> QKV:
        changed = list(qkv)
        changed[index] = qkv[index] * epsilon
        return tuple(changed)  # type: ignore[return-value]

    return modify


def mean_over_positions(target: str) -> Modifier:
    """Replace q, k or v of each head by its mean over token positions."""
    index = TARGETS.index(target)

    def modify(qkv: QKV) -> QKV:
        changed = list(qkv)
        changed[index] = qkv[index].mean(dim=1, keepdim=True).expand_as(qkv[index])
        return tuple(changed)  # type: ignore[return-value]

    return modify


def identity(qkv: QKV) -> QKV:
    return qkv


@dataclass(frozen=True)
class Outcome:
    """What one (possibly modified) pass showed."""

    probs: dict[int, torch.Tensor]  # observed layer -> (head, query, key)
    log_probs: torch.Tensor  # (query, vocab) next-token log-distribution
    prefix: tuple[object, ...] = ()  # outputs of the blocks before the intervention layer


@contextmanager
def replayed_blocks(blocks: list[nn.Module], outputs: tuple[object, ...]) -> Iterator[None]:
    """Make each block return its recorded output instead of recomputing it.

    Blocks before the intervention layer see the same input in every pass of a grid,
    so replaying the unmodified pass's outputs gives the same numbers without the work.
    The instance attribute shadows the class's ``forward`` (or accelerate's wrapper of it,
    which then does not load an offloaded block's weights either) and is always undone.
    """
    with ExitStack() as stack:
        for block, output in zip(blocks, outputs, strict=False):
            stack.enter_context(swapped_forward(block, _constant(output)))
        yield


def _constant(output: object) -> Callable[..., object]:
    return lambda *args, **kwargs: output


def _record_outputs(blocks: list[nn.Module], sink: list[object]) -> list:
    def hook(_module, _args, output):
        sink.append(output)

    return [(block, "post", hook) for block in blocks]


def run_modified(
    model: nn.Module,
    specs: list[LayerSpec],
    input_ids: torch.Tensor,
    layer: int,
    modify: Modifier,
    observe: tuple[int, ...],
    prefix: tuple[object, ...] = (),
) -> Outcome:
    """One forward pass with ``modify`` applied at ``layer``; probabilities at ``observe``.

    ``observe`` must not precede ``layer``. Pass the ``prefix`` of an unmodified pass on
    the same input to replay the blocks before ``layer``; without it the pass records one.
    """
    blocks = [s.block for s in specs]
    slots = {i: Slots() for i in sorted(set(observe) | {layer})}
    tap = LayerTap(specs, slots)
    tap.modifiers[layer] = modify
    recorded: list[object] = []
    hooks = [] if prefix else _record_outputs(blocks[:layer], recorded)
    with replayed_blocks(blocks[:layer], prefix), instrumented(model, specs, tap, hooks):
        logits = forward_logits(model, input_ids)
    probs = {i: slots[i].values["computed"].probs for i in observe}
    log_probs = torch.log_softmax(logits.float(), dim=-1)
    return Outcome(probs, log_probs, prefix or tuple(recorded))


def next_token_kl(base: torch.Tensor, changed: torch.Tensor) -> torch.Tensor:
    """KL(p_base || p_changed) of the next-token distribution at each position, in nats (query,)."""
    return (base.exp() * (base - changed)).sum(-1).clamp_min(0.0)


def observed_layers(layer: int, n_layers: int) -> dict[str, int]:
    """The same layer, the next one (the same when it is the last) and the last layer."""
    return {"same": layer, "next": min(layer + 1, n_layers - 1), "last": n_layers - 1}


@dataclass(frozen=True)
class GridCell:
    target: str  # "Q", "K" or "V"
    setting: float | int  # epsilon (scaling grid) or sentence index (mean grid)
    outcome: Outcome
    kl: torch.Tensor  # (query,) nats


def scaling_grid(
    model: nn.Module,
    specs: list[LayerSpec],
    input_ids: torch.Tensor,
    layer: int,
    epsilons: tuple[float, ...],
) -> tuple[Outcome, list[GridCell]]:
    """Baseline and one cell per (target, epsilon): rows Q, K, V; columns epsilons."""
    observe = tuple(sorted(set(observed_layers(layer, len(specs)).values())))
    base = run_modified(model, specs, input_ids, layer, identity, observe)
    cells = []
    for target in TARGETS:
        for epsilon in epsilons:
            modify = scale(target, epsilon)
            outcome = run_modified(model, specs, input_ids, layer, modify, observe, base.prefix)
            cells.append(
                GridCell(target, epsilon, outcome, next_token_kl(base.log_probs, outcome.log_probs))
            )
    return base, cells


def mean_grid(
    model: nn.Module,
    specs: list[LayerSpec],
    inputs: dict[int, torch.Tensor],
    layer: int,
) -> tuple[dict[int, Outcome], list[GridCell]]:
    """Baselines per input and one cell per (input, target): rows inputs; columns Q, K, V."""
    observe = tuple(sorted(set(observed_layers(layer, len(specs)).values())))
    baselines, cells = {}, []
    for index, ids in inputs.items():
        base = run_modified(model, specs, ids, layer, identity, observe)
        baselines[index] = base
        for target in TARGETS:
            modify = mean_over_positions(target)
            outcome = run_modified(model, specs, ids, layer, modify, observe, base.prefix)
            cells.append(
                GridCell(target, index, outcome, next_token_kl(base.log_probs, outcome.log_probs))
            )
    return baselines, cells
