"""Capture every layer's attention internals in one forward pass of the model's own code.

The model's attention is routed through ``attnreport.interface`` (which computes and
records scores, probabilities and per-head outputs exactly where the model computes
them); a few hooks add the block input, the attention input, the rotary (cos, sin)
and the output projection's output. ``instrumented`` registers the hooks, switches
the attention implementation, and always undoes both, also when the pass raises.
Score terms and per-head updates are derived one layer at a time by
``Capture.records()``.

Each layer's tensors are moved to CPU memory as that layer finishes (in the model's
dtype; a no-op for a model on the CPU), so a model spread over GPUs, or offloaded by
accelerate, holds only the layer it is running on its devices; nothing ever moves the
whole model.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, fields, replace
from typing import Any

import torch
from torch import nn

from attnreport.attention import RawLayer, layer_record
from attnreport.interface import NAME, Computed, routed
from attnreport.models.layout import LayerSpec
from attnreport.models.placement import HostCopies, host, input_device
from attnreport.models.post_norm import epsilon, gain, token_scale
from attnreport.records import LayerRecord
from attnreport.scratch import Scratch

Hook = tuple[nn.Module, str, Callable[..., Any]]  # (module, "pre" | "post", fn)
Modifier = Callable[
    [tuple[torch.Tensor, torch.Tensor, torch.Tensor]],
    tuple[torch.Tensor, torch.Tensor, torch.Tensor],
]


@contextmanager
def installed_hooks(hooks: list[Hook]) -> Iterator[None]:
    """Register forward hooks (pre-hooks receive kwargs) and always remove them."""
    handles = []
    try:
        for module, kind, fn in hooks:
            if kind == "pre":
                handles.append(module.register_forward_pre_hook(fn, with_kwargs=True))
            else:
                handles.append(module.register_forward_hook(fn))
        yield
    finally:
        for handle in handles:
            handle.remove()


def _first_input(args: tuple, kwargs: dict) -> torch.Tensor:
    return args[0] if args else kwargs["hidden_states"]


@dataclass
class Slots:
    """Per-layer scratch the hooks and the attention function fill in, in CPU memory
    (``layer_hooks``, ``LayerTap.record``); ``raw_layer`` reads a filled one."""

    x: torch.Tensor | None = None  # (query, hidden) the block's input
    a: torch.Tensor | None = None  # (query, hidden) the attention's input (after its norm)
    rotary: tuple[torch.Tensor, ...] | None = None  # the layer's (cos, sin), if it rotates
    block_out: torch.Tensor | None = None  # (query, hidden) the output projection's output
    # (query, hidden) g / rms(block_out): what a post-attention norm multiplies it by
    out_scale: torch.Tensor | None = None
    post_out: torch.Tensor | None = None  # (query, hidden) the post-attention norm's output
    gated: torch.Tensor | None = None  # (query, head * d) g * z, for a gated output only
    computed: Computed | None = None  # what the attention function scored and returned

    def clear(self) -> None:
        """Let go of every tensor (the layer has been analysed)."""
        for f in fields(self):
            setattr(self, f.name, None)


def hosted(computed: Computed, copies: HostCopies) -> Computed:
    """``computed`` with every tensor in CPU memory (the mask, shared by the layers, once)."""
    moved = {
        f.name: copies(value) if f.name == "mask" else host(value)
        for f in fields(computed)
        if isinstance(value := getattr(computed, f.name), torch.Tensor)
    }
    return replace(computed, **moved)


class LayerTap:
    """The interface tap: records each watched layer's ``Computed`` (moved to CPU memory);
    modifies one layer."""

    def __init__(self, specs: list[LayerSpec], slots: dict[int, Slots]) -> None:
        self.layer_of = {id(s.attention): s.layer for s in specs}
        self.slots = slots
        self.modifiers: dict[int, Modifier] = {}
        self.copies = HostCopies()
        # the blockwise attention keeps the probabilities of the first ``leading_rows``
        # queries of each watched layer (``Scored.leading_probs``); 0: none
        self.leading_rows = 0
        # the blockwise attention hands each block it computes to this, where set
        # (``streaming.BlockReducer``), and keeps what it returns (``Scored.reduced``)
        self.reduce_block: Callable[..., dict[str, torch.Tensor]] | None = None
        # the blockwise attention's buffers for its blocks, reused by every layer
        self.scratch = Scratch()

    def modify(self, module, q, k, v):
        modifier = self.modifiers.get(self.layer_of.get(id(module), -1))
        if modifier is None:
            return q, k, v
        changed = modifier((q[0], k[0], v[0]))  # per head: (heads, n, d)
        return tuple(t[None] for t in changed)

    def record(self, module, computed: Computed) -> None:
        layer = self.layer_of.get(id(module))
        if layer in self.slots:
            self.slots[layer].computed = hosted(computed, self.copies)


def layer_hooks(spec: LayerSpec, slots: Slots, copies: HostCopies) -> list[Hook]:
    """Hooks that keep the block input, the attention input, the rotary (cos, sin) and the
    output projection's output of one layer, in CPU memory; for a layer with an output gate
    also the projection's input (the gated output each head's update is made of); for a
    layer with a post-attention norm the scale it multiplies that output by
    (``post_norm.token_scale``), computed from the output alone, on its device."""
    scale = _scale_of(spec.post_norm)

    def on_block(_module, args, kwargs):
        slots.x = host(_first_input(args, kwargs)[0])

    def on_attention(_module, args, kwargs):
        slots.a = host(_first_input(args, kwargs)[0])
        rotary = kwargs.get("position_embeddings")
        slots.rotary = None if rotary is None else tuple(copies(t) for t in rotary)

    def on_out(_module, _args, output):
        slots.block_out = host(output[0])
        if scale is not None:
            slots.out_scale = host(scale(output[0]))

    def on_gated(_module, args, kwargs):
        slots.gated = host(_first_input(args, kwargs)[0])  # (query, head * d): g * z

    hooks: list[Hook] = [
        (spec.block, "pre", on_block),
        (spec.attention, "pre", on_attention),
        (spec.out_proj, "post", on_out),
    ]
    return hooks + ([(spec.out_proj, "pre", on_gated)] if spec.gated else [])


def _scale_of(norm: nn.Module | None) -> Callable[[torch.Tensor], torch.Tensor] | None:
    """``z -> token_scale(z)`` of a post-attention norm (its gain read once, on the device
    it first runs on), or None without one."""
    if norm is None:
        return None
    eps = epsilon(norm)
    gains: dict[torch.device, torch.Tensor] = {}

    def scale(z: torch.Tensor) -> torch.Tensor:
        if z.device not in gains:
            gains[z.device] = gain(norm, z.shape[-1], z.device)
        return token_scale(z, eps, gains[z.device])  # type: ignore[arg-type]  # eps: decomposes

    return scale


def post_norm_hooks(spec: LayerSpec, slots: Slots) -> list[Hook]:
    """A hook keeping what a layer's post-attention norm wrote (for ``verify``), if it has one."""

    def on_norm(_module, _args, output):
        slots.post_out = host(output[0])

    return [] if spec.post_norm is None else [(spec.post_norm, "post", on_norm)]


def raw_layer(slots: Slots) -> RawLayer:
    return RawLayer(
        x=slots.x, a=slots.a, computed=slots.computed, rotary=slots.rotary,
        block_out=slots.block_out, gated=slots.gated, out_scale=slots.out_scale,
        post_out=slots.post_out,
    )  # type: ignore[arg-type]  # fmt: skip


@contextmanager
def instrumented(
    model: nn.Module, specs: list[LayerSpec], tap: LayerTap, hooks: list[Hook], name: str = NAME
):
    """The model routed through our attention function (the one registered as ``name``)
    with ``hooks``; all undone on exit."""
    with ExitStack() as stack:
        stack.enter_context(specs[0].family.adapted(model))
        stack.enter_context(routed(model, tap, name))
        stack.enter_context(installed_hooks(hooks))
        stack.enter_context(torch.no_grad())
        yield


def forward_logits(
    model: nn.Module, input_ids: torch.Tensor, logits_to_keep: int = 0
) -> torch.Tensor:
    """(query, vocab) logits of one pass, in CPU memory; of the last ``logits_to_keep``
    positions if > 0."""
    ids = input_ids[None].to(input_device(model))
    return host(model(input_ids=ids, use_cache=False, logits_to_keep=logits_to_keep).logits[0])


@dataclass(frozen=True)
class Capture:
    """One sentence's pass: raw per-layer tensors plus the last position's logits (1, vocab)
    (the analyses use none; the LM head over every position would cost a fifth of a short
    sentence's pass)."""

    specs: list[LayerSpec]
    raw: list[RawLayer]
    logits: torch.Tensor

    @property
    def n_layers(self) -> int:
        return len(self.raw)

    def record(self, layer: int, with_terms: bool = True) -> LayerRecord:
        return layer_record(self.specs[layer], self.raw[layer], with_terms)

    def records(self, with_terms: bool = True) -> Iterator[LayerRecord]:
        """Layer records one at a time; drop each before asking for the next to bound memory."""
        for layer in range(self.n_layers):
            yield self.record(layer, with_terms)


def capture_attention(model: nn.Module, specs: list[LayerSpec], input_ids: torch.Tensor) -> Capture:
    """Run the model once on ``input_ids`` (n,) and capture every layer's internals."""
    slots = {s.layer: Slots() for s in specs}
    tap = LayerTap(specs, slots)
    hooks = [h for s in specs for h in layer_hooks(s, slots[s.layer], tap.copies)]
    hooks += [h for s in specs for h in post_norm_hooks(s, slots[s.layer])]
    with instrumented(model, specs, tap, hooks):
        logits = forward_logits(model, input_ids, logits_to_keep=1)
    raw = [raw_layer(slots[s.layer]) for s in specs]
    return Capture(specs=specs, raw=raw, logits=logits)
