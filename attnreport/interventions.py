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
from attnreport.interface import NAME
from attnreport.models.layout import LayerSpec
from attnreport.models.placement import swapped_forward
from attnreport.next_token import check_head, final_hidden
from attnreport.next_token import next_token_kl as blockwise_kl
from attnreport.streaming import STREAM_NAME
from attnreport.vocabulary import TARGETS

QKV = tuple[torch.Tensor, torch.Tensor, torch.Tensor]
Modifier = Callable[[QKV], QKV]


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


def mean_before_rotation(target: str, rotate, rotary: list) -> Modifier:
    """Replace q or k of each head by its mean over positions taken *before* the rotary
    rotation, then rotated again per position: ``R_i mean_j(R_j^-1 x_j)``.

    ``rotate`` is the model's ``apply_rotary_pos_emb``; ``rotary`` a one-item list the
    attention pre-hook fills with the layer's (cos, sin) during the pass. After the
    rotation (``mean_over_positions``) every key is one vector and attention is uniform
    by construction; before it, keys keep their positions.
    """
    index = TARGETS.index(target)

    def modify(qkv: QKV) -> QKV:
        cos, sin = rotary[0]
        x = qkv[index]  # (heads, n, d) as scored, rotated
        norm = cos * cos + sin * sin
        plain = rotate(x[None], x[None], cos / norm, -sin / norm)[0][0]  # rotation undone
        mean = plain.mean(dim=1, keepdim=True).expand_as(plain).contiguous()
        changed = list(qkv)
        changed[index] = rotate(mean[None], mean[None], cos, sin)[0][0].to(x.dtype)
        return tuple(changed)  # type: ignore[return-value]

    return modify


def identity(qkv: QKV) -> QKV:
    return qkv


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

    ``observe`` must not precede ``layer``. Pass the ``prefix`` of an unmodified pass on
    the same input to replay the blocks before ``layer``; without it the pass records one.
    An input longer than ``leading`` tokens runs through the blockwise attention
    (``attnreport.streaming``): nothing n x n and no (query, vocab) logits are kept.
    """
    blocks = [s.block for s in specs]
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
    leading: int | None = None,
) -> tuple[Outcome, list[GridCell]]:
    """Baseline and one cell per (target, epsilon): rows Q, K, V; columns epsilons.

    Cells keep only their observed probabilities and KL (``Outcome.kept``); an input
    longer than ``leading`` tokens is observed over its first ``leading`` queries.
    """
    observe = tuple(sorted(set(observed_layers(layer, len(specs)).values())))
    base = run_modified(model, specs, input_ids, layer, identity, observe, (), leading)
    cells = []
    for target in TARGETS:
        for epsilon in epsilons:
            modify = scale(target, epsilon)
            outcome = run_modified(
                model, specs, input_ids, layer, modify, observe, base.prefix, leading
            )
            kl = outcome_kl(model, base, outcome)
            cells.append(GridCell(target, epsilon, outcome.kept(), kl))
    return base.kept(), cells


def mean_grid(
    model: nn.Module,
    specs: list[LayerSpec],
    inputs: dict[int, torch.Tensor],
    layer: int,
    leading: int | None = None,
) -> tuple[dict[int, Outcome], list[GridCell]]:
    """Baselines per input and one cell per (input, target): rows inputs; columns Q, K, V.

    Kept and observed as in ``scaling_grid``.
    """
    observe = tuple(sorted(set(observed_layers(layer, len(specs)).values())))
    baselines, cells = {}, []
    for index, ids in inputs.items():
        base = run_modified(model, specs, ids, layer, identity, observe, (), leading)
        for target in TARGETS:
            modify = mean_over_positions(target)
            outcome = run_modified(model, specs, ids, layer, modify, observe, base.prefix, leading)
            cells.append(GridCell(target, index, outcome.kept(), outcome_kl(model, base, outcome)))
        baselines[index] = base.kept()
    return baselines, cells


def _rotary_hook(spec: LayerSpec, sink: list) -> list:
    """A pre-hook on the layer's attention that keeps its (cos, sin) in ``sink``."""

    def hook(_module, _args, kwargs):
        sink[:] = [kwargs["position_embeddings"]]

    return [(spec.attention, "pre", hook)]


def mean_grid_before_rotation(
    model: nn.Module,
    specs: list[LayerSpec],
    inputs: dict[int, torch.Tensor],
    layer: int,
    leading: int | None = None,
) -> list[GridCell]:
    """Q and K replaced by their mean taken before the rotary rotation (``mean_before_rotation``),
    one cell per (input, target); empty for a model that does not rotate q and k. V is not
    rotated, so its cell would be the ``mean_grid`` one. KL against an unmodified pass."""
    spec = specs[layer]
    if spec.rotate is None:
        return []
    observe = tuple(sorted(set(observed_layers(layer, len(specs)).values())))
    cells = []
    for index, ids in inputs.items():
        base = run_modified(model, specs, ids, layer, identity, observe, (), leading)
        for target in ("Q", "K"):
            rotary: list = []
            modify = mean_before_rotation(target, spec.rotate, rotary)
            outcome = run_modified(model, specs, ids, layer, modify, observe, base.prefix,
                                   leading, _rotary_hook(spec, rotary))  # fmt: skip
            cells.append(GridCell(target, index, outcome.kept(), outcome_kl(model, base, outcome)))
    return cells
