"""Interventions: real forward passes with q, k or v of every head of one layer changed.

q and k are changed where the model computes scores: after the positional transform
(RoPE rotation; ALiBi and absolute models have none on q/k), v after its projection.
At the intervention layer the attention block output is recomputed from the changed
tensors (``attention.attend``, verified exact) and swapped into the module's output;
every later layer then runs the model's own code on the changed residual stream.

Scaling q (or k) by a small epsilon tempers the scores towards uniform causal
attention for RoPE and absolute models; for ALiBi models the ALiBi bias is not scaled,
so attention tends to the ALiBi pattern instead. Scaling v leaves this layer's
probabilities unchanged by construction; its effect shows in later layers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import torch
from torch import nn

from attnreport.attention import LayerSpec, RawLayer, attend, heads_of
from attnreport.capture import Slots, block_hooks, installed_hooks, raw_layer

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
    The instance attribute shadows the class's ``forward`` and is always removed.
    """
    replaced = []
    try:
        for block, output in zip(blocks, outputs, strict=False):
            block.forward = _constant(output)
            replaced.append(block)
        yield
    finally:
        for block in replaced:
            del block.forward


def _constant(output: object) -> Callable[..., object]:
    return lambda *args, **kwargs: output


def _record_outputs(blocks: list[nn.Module], sink: list[object]) -> list:
    def hook(_module, _args, output):
        sink.append(output)

    return [(block, "post", hook) for block in blocks]


def _swap_hook(spec: LayerSpec, slots: Slots, modify: Modifier, sink: dict[int, torch.Tensor]):
    """Forward hook on the attention module: replace its output by the modified block output."""

    def hook(_module: nn.Module, _args: tuple, output):
        raw = raw_layer(slots)
        _, _, q, k, v = heads_of(spec, raw)
        _, probs, _, block_out = attend(spec, raw, *modify((q, k, v)))
        sink[spec.layer] = probs
        # The module output is block_out (+ the residual for BLOOM): swap only the block part.
        hidden = output[0] - raw.block_out[None] + block_out[None]
        return (hidden, *output[1:])

    return hook


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
    family = specs[0].family
    blocks = family.blocks(model)
    watched = sorted(set(observe) | {layer})
    slots = {i: Slots() for i in watched}
    hooks = [h for i in watched for h in block_hooks(specs[i], blocks[i], slots[i])]
    probs: dict[int, torch.Tensor] = {}
    attn = family.attention(blocks[layer])
    hooks.append((attn, "post", _swap_hook(specs[layer], slots[layer], modify, probs)))
    recorded: list[object] = []
    if not prefix:
        hooks += _record_outputs(blocks[:layer], recorded)
    device = next(model.parameters()).device
    with replayed_blocks(blocks[:layer], prefix), installed_hooks(hooks), torch.no_grad():
        logits = model(input_ids=input_ids[None].to(device), use_cache=False).logits[0]
    for i in observe:
        if i not in probs:
            probs[i] = _probs_of(specs[i], raw_layer(slots[i]))
    log_probs = torch.log_softmax(logits.float(), dim=-1)
    return Outcome({i: probs[i] for i in observe}, log_probs, prefix or tuple(recorded))


def _probs_of(spec: LayerSpec, raw: RawLayer) -> torch.Tensor:
    _, _, q, k, v = heads_of(spec, raw)
    return attend(spec, raw, q, k, v)[1]


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
