"""What an adapter family shares: a model whose attention does not call the interface
(BLOOM, GPT-J, GPT-Neo...) gets, while ``adapted`` is active, an equivalent forward on
each of its attention modules that computes q, k and v with the model's own modules and
hands the attention itself to the function registered under the model's attention
implementation (``attnreport.interface.attention``, or the blockwise one of
``attnreport.streaming``). The output projection and everything after it are the
model's own modules and ops. An adapter module defines that forward and an ``Adapter``
(its ``ADAPTER``) naming the attention class it replaces; its row in ``table`` names it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Protocol

import torch
from torch import nn

from attnreport.interface import attention
from attnreport.models.families.base import FamilyRecord, Output, Reported
from attnreport.models.placement import swapped_forward
from attnreport.models.rotary import Rotate

Forward = Callable[..., object]


def interface_function(config) -> Callable[..., tuple[torch.Tensor, torch.Tensor]]:
    """The attention function registered under the name ``config`` routes to."""
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

    return ALL_ATTENTION_FUNCTIONS.get(config._attn_implementation, attention)


def mask_for(function, allowed: torch.Tensor, dtype: torch.dtype, padding=None) -> torch.Tensor:
    """The (1, 1, query, key) mask ``function`` reads for the (query, key) bool ``allowed``:
    additive (0 where allowed, the dtype's minimum where blocked) for the eager function,
    as transformers' eager masks are; boolean for the blockwise one. ``padding`` is the
    model's own mask (additive, or boolean for the blockwise function; (batch, 1, 1 or
    query, key)), combined with ``allowed``, or None."""
    allowed = allowed[None, None]
    if function is attention:
        blocked = torch.finfo(dtype).min
        mask = torch.zeros(allowed.shape, dtype=dtype, device=allowed.device)
        mask = mask.masked_fill(~allowed, blocked)
        return mask if padding is None else (mask + padding.to(dtype)).clamp_min(blocked)
    if padding is None:
        return allowed
    return allowed & (padding if padding.dtype == torch.bool else padding == 0)


def causal(n: int, device, window: int | None = None) -> torch.Tensor:
    """(n, n) bool: key j allowed for query i iff j <= i (and i - window < j)."""
    i = torch.arange(n, device=device)
    allowed = i[None, :] <= i[:, None]
    return allowed if window is None else allowed & (i[None, :] > i[:, None] - window)


def _handed_positions(positions: Callable[..., tuple[torch.Tensor, torch.Tensor] | None]):
    """A pre-hook handing the module ``position_embeddings=positions(module, kwargs)``
    (kwargs unchanged where that is None)."""

    def hook(module, args, kwargs):
        handed = positions(module, kwargs)
        return None if handed is None else (args, {**kwargs, "position_embeddings": handed})

    return hook


def from_position_ids(table: Callable[..., tuple[torch.Tensor, torch.Tensor]]):
    """``positions`` for a module given position ids and no (cos, sin): ``table(module, ids)``."""

    def positions(module, kwargs):
        if kwargs.get("position_embeddings") is not None or kwargs.get("position_ids") is None:
            return None
        return table(module, kwargs["position_ids"])

    return positions


@contextmanager
def forwards_swapped(
    model: nn.Module, class_name: str, forward: Forward, positions=None
) -> Iterator[None]:
    """Each module of class ``class_name`` runs ``forward(module, model.config, ...)``; with
    ``positions``, it is handed the (cos, sin) its rotation uses as ``position_embeddings``
    by a hook that runs before any other (so discovery and capture see them, as they see
    those of interface models)."""
    modules = [m for m in model.modules() if type(m).__name__ == class_name]
    with ExitStack() as stack:
        for module in modules:
            stack.enter_context(swapped_forward(module, partial(forward, module, model.config)))
            if positions is not None:
                stack.callback(
                    module.register_forward_pre_hook(
                        _handed_positions(positions), prepend=True, with_kwargs=True
                    ).remove
                )
        yield


@dataclass(frozen=True)
class Adapter:
    """What an adapter module supplies (its ``ADAPTER``): each module of class
    ``attention_class`` runs ``forward`` while adapted."""

    attention_class: str
    forward: Forward
    # (module, kwargs) -> (cos, sin) handed to the forward as position_embeddings, or None
    positions: Callable[..., tuple[torch.Tensor, torch.Tensor]] | None = None
    # the optional hooks, as ``base.Family`` documents them
    rotate: Rotate | None = None
    output: Output | None = None
    reported: Reported | None = None

    def adapted(self, model: nn.Module) -> AbstractContextManager[None]:
        return forwards_swapped(model, self.attention_class, self.forward, self.positions)


class AdapterCode(Protocol):
    """An adapter module's ``ADAPTER``: an ``Adapter``, or its own (BLOOM's refuses a layout)."""

    rotate: Rotate | None
    output: Output | None
    reported: Reported | None

    def adapted(self, model: nn.Module) -> AbstractContextManager[None]: ...


@dataclass(frozen=True)
class AdapterFamily(FamilyRecord):
    """A family whose attention runs the forward of its ``adapter`` while adapted."""

    adapter: AdapterCode = field(kw_only=True)
    route: str = "adapter"

    @property
    def rotate(self) -> Rotate | None:
        return self.adapter.rotate

    @property
    def output(self) -> Output | None:
        return self.adapter.output

    @property
    def reported(self) -> Reported | None:
        return self.adapter.reported

    def adapted(self, model: nn.Module) -> AbstractContextManager[None]:
        return self.adapter.adapted(model)
