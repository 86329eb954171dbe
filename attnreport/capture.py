"""Capture every layer's attention internals in one forward pass of the model's own code.

Hooks are registered inside ``installed_hooks``, a context manager that removes them
in ``finally``, so a model is never left instrumented, even when the pass raises.
Capture keeps only the O(n x model) tensors the model produced per block; the
O(n x n) scores, probabilities and score terms are recomputed one layer at a time by
``Capture.records()``, so a caller that keeps only summaries never holds more than one
layer's n x n tensors.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from attnreport.attention import LayerSpec, RawLayer, layer_record
from attnreport.records import LayerRecord

Hook = tuple[nn.Module, str, Callable[..., Any]]  # (module, "pre" | "post", fn)


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
    """Per-layer scratch the hooks fill in; turned into ``RawLayer`` after the pass."""

    values: dict[str, Any] = field(default_factory=dict)
    projections: list[torch.Tensor] = field(default_factory=list)


def _positional(kwargs: dict) -> tuple[torch.Tensor, ...] | None:
    if kwargs.get("position_embeddings") is not None:
        cos, sin = kwargs["position_embeddings"]
        return cos.detach(), sin.detach()
    if kwargs.get("alibi") is not None:
        return (kwargs["alibi"].detach(),)  # (batch * head, 1, key) with batch 1
    return None


def block_hooks(spec: LayerSpec, block: nn.Module, slots: Slots) -> list[Hook]:
    family = spec.family
    attn = family.attention(block)

    def on_block(_module, args, kwargs):
        slots.values["x"] = _first_input(args, kwargs).detach()[0]

    def on_attention(_module, args, kwargs):
        slots.values["a"] = _first_input(args, kwargs).detach()[0]
        mask = kwargs.get("attention_mask")
        slots.values["mask"] = None if mask is None else mask.detach()[0, 0]
        slots.values["positional"] = _positional(kwargs)

    def on_projection(_module, _args, output):
        slots.projections.append(output.detach()[0])

    def on_out(_module, _args, output):
        slots.values["block_out"] = output.detach()[0]

    hooks: list[Hook] = [(block, "pre", on_block), (attn, "pre", on_attention)]
    hooks += [(getattr(attn, name), "post", on_projection) for name in family.projections]
    hooks.append((getattr(attn, family.out_proj), "post", on_out))
    return hooks


@dataclass(frozen=True)
class Capture:
    """One sentence's pass: raw per-layer tensors plus the final logits (query, vocab)."""

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
    blocks = specs[0].family.blocks(model)
    slots = [Slots() for _ in specs]
    hooks = [
        h
        for spec, block, s in zip(specs, blocks, slots, strict=True)
        for h in block_hooks(spec, block, s)
    ]
    device = next(model.parameters()).device
    with installed_hooks(hooks), torch.no_grad():
        logits = model(input_ids=input_ids[None].to(device), use_cache=False).logits[0]
    raw = [raw_layer(s) for s in slots]
    return Capture(specs=specs, raw=raw, logits=logits.detach())


def raw_layer(slots: Slots) -> RawLayer:
    v = slots.values
    return RawLayer(
        x=v["x"],
        a=v["a"],
        projections=slots.projections,
        mask=v["mask"],
        positional=v["positional"],
        block_out=v["block_out"],
    )
