"""The one protocol every supported architecture meets, and its common implementation.

Capture is generic: it reads everything at the attention interface
(``attnreport.interface``) and from the attention module's own children. A family
record therefore only names the architecture, says how positions enter the score
(for the manifest and the charts), lists the features it was verified with (for the
README table) and, for models whose attention does not route through the interface,
supplies an adapter that makes it do so while capture runs.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Protocol

from torch import nn

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


@dataclass(frozen=True)
class FamilyRecord:
    """What every family says about itself (``Family``'s data; ``table`` gives it)."""

    name: str
    model_types: tuple[str, ...]
    positional: str
    verified: tuple[str, ...] = ()
    architecture: tuple[str, ...] = ()


@contextmanager
def _unchanged(_model: nn.Module) -> Iterator[None]:
    yield


@dataclass(frozen=True)
class InterfaceFamily(FamilyRecord):
    """A family whose attention modules call ``ALL_ATTENTION_FUNCTIONS`` themselves."""

    route: str = "interface"

    def adapted(self, model: nn.Module) -> AbstractContextManager[None]:
        return _unchanged(model)
