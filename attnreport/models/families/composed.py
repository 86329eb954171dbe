"""An output projection composed from a model's own weights, for adapters whose model has
no single linear map from the heads' outputs to the block output.

JetMoE projects each routed expert's heads with that expert's own matrix; DiffLlama
subtracts one head's output, scaled by a learned lambda, from another's before its
``o_proj``. Their adapters write the same output as one linear map of a gated
per-head input, u_h = W_O,h (g_h z_h), whose (out, in) weight is composed here from the
model's parameters each time it is read (nothing is copied into the model or saved with
it). Capture reads it like any output projection: its per-head slices, its input (the
gated output) and its output (the block output the self-check sums the updates to).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable

import torch
from torch import nn

Tensor = torch.Tensor


class ComposedLinear(nn.Linear):
    """``y = x @ weight().T + bias()``: a Linear whose weight (out, in) and bias (out,) or None
    are functions of other modules' parameters. It owns no parameter. ``folded``: norm
    modules of the attention whose work the gate of its input does (not QK-norms)."""

    def __init__(
        self,
        weight: Callable[[], Tensor],
        bias: Callable[[], Tensor | None],
        folded: tuple[nn.Module, ...] = (),
    ) -> None:
        nn.Module.__init__(self)
        self._weight, self._bias = weight, bias
        object.__setattr__(self, "folded", folded)  # not submodules: nothing of ours to own

    @property
    def weight(self) -> Tensor:  # type: ignore[override]
        return self._weight()

    @property
    def bias(self) -> Tensor | None:  # type: ignore[override]
        return self._bias()

    def forward(self, x: Tensor) -> Tensor:
        return nn.functional.linear(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        out, into = self.weight.shape
        return f"composed: in_features={into}, out_features={out}"


def composed_for(make: Callable[[nn.Module], ComposedLinear]) -> Callable[[nn.Module], nn.Module]:
    """``make(attention)`` once per attention module (the same object each time it is asked
    for, so hooks registered on it by capture see every call; dropped with the module)."""
    made: weakref.WeakKeyDictionary[nn.Module, ComposedLinear] = weakref.WeakKeyDictionary()

    def output(attention: nn.Module) -> ComposedLinear:
        if attention not in made:
            made[attention] = make(attention)
        return made[attention]

    return output
