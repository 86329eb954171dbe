"""The one protocol every supported architecture meets, and its common implementation.

Capture is generic: it reads everything at the attention interface
(``attnreport.interface``) and from the attention module's own children. A family
record therefore only names the architecture, says how positions enter the score
(for the manifest and the charts), lists the features it was verified with (for the
README table) and, for models whose attention does not route through the interface,
supplies an adapter that makes it do so while capture runs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Protocol

import torch
from torch import nn

from attnreport.models.rotary import Rotate  # rotate(q, k, cos, sin) -> (q, k) rotated

# attention module -> the output projection its forward calls on a gated output g * z
Output = Callable[[nn.Module], nn.Module]
# (layer spec, record) -> our probabilities laid out as the model's output_attentions
Reported = Callable[..., torch.Tensor]

POSITIONAL = ("rope", "alibi", "absolute")


class Family(Protocol):
    """One architecture family (a row of ``attnreport.models.families.table``)."""

    name: str
    model_types: tuple[str, ...]  # config.model_type values it covers
    positional: str  # "rope", "alibi" or "absolute"
    verified: tuple[str, ...]  # features the tiny-model tests exercise, e.g. ("gqa", "softcap")
    architecture: tuple[
        str, ...
    ]  # features outside the attention function, e.g. post-attention norms

    def adapted(self, model: nn.Module) -> AbstractContextManager[None]:
        """While active, the model's attention calls the interface (no-op for most)."""
        ...

    # What an adapter may supply (``adapter.Adapter``); None where the family has none.
    @property
    def rotate(self) -> Rotate | None:
        """The adapter's rotation of q and k, which discovery inverts (GPT-J's every-two
        pairs); None: the rotation is found from the model's own code."""
        ...

    @property
    def output(self) -> Output | None:
        """The output projection the adapter composes, for a model with no one linear map
        from the heads' outputs (JetMoE; ``composed.py``); None: found in the module."""
        ...

    @property
    def reported(self) -> Reported | None:
        """Our probabilities as the model's ``output_attentions`` reports them, where its
        heads are not ours (JetMoE's routed slots); None: the model reports our heads."""
        ...


@dataclass(frozen=True)
class FamilyRecord:
    """What every family says about itself (``Family``'s data; ``table`` gives it)."""

    name: str
    model_types: tuple[str, ...]
    positional: str
    verified: tuple[str, ...] = ()
    architecture: tuple[str, ...] = ()

    # a family without an adapter supplies none of ``Family``'s optional hooks
    @property
    def rotate(self) -> Rotate | None:
        return None

    @property
    def output(self) -> Output | None:
        return None

    @property
    def reported(self) -> Reported | None:
        return None


@contextmanager
def _unchanged(_model: nn.Module) -> Iterator[None]:
    yield


@dataclass(frozen=True)
class InterfaceFamily(FamilyRecord):
    """A family whose attention modules call ``ALL_ATTENTION_FUNCTIONS`` themselves."""

    route: str = "interface"

    def adapted(self, model: nn.Module) -> AbstractContextManager[None]:
        return _unchanged(model)
