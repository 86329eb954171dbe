"""The intervention kinds: a registry of small modules, one kind each.

A kind says how it changes one layer's attention in a pass: ``change(spec, target,
setting)`` gives the ``Change`` (a change of q, k and v as scored, and any hooks it
needs) for one of its ``targets`` ("Q", "K", "V" or a tensor of its own) and one setting
(an epsilon; None for a kind without one). ``grids.cells`` runs any kind. A new kind is a
module that calls ``register`` (and is listed in ``interventions/__init__.py``), or a
``register`` call of its own (a test's toy kind).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from attnreport.capture import Hook
from attnreport.errors import AttnReportError
from attnreport.models.layout import LayerSpec
from attnreport.vocabulary import TARGETS

QKV = tuple[torch.Tensor, torch.Tensor, torch.Tensor]  # per head: (head, n, d) each
Modifier = Callable[[QKV], QKV]


def identity(qkv: QKV) -> QKV:
    return qkv


@dataclass(frozen=True)
class Change:
    """One intervention as a pass applies it at its layer."""

    modify: Modifier = identity  # q, k, v (as scored) -> the changed ones
    hooks: tuple[Hook, ...] = ()  # further forward hooks for the pass (installed, then removed)


@dataclass(frozen=True)
class Kind:
    """An intervention kind: its name, the tensors it changes and how."""

    name: str
    change: Callable[[LayerSpec, str, float | None], Change]
    targets: tuple[str, ...] = TARGETS
    applies: Callable[[LayerSpec], bool] = lambda _spec: True  # e.g. rotary models only


KINDS: dict[str, Kind] = {}


def register(kind: Kind) -> Kind:
    """Add ``kind`` to the registry (a second kind of the same name replaces the first)."""
    KINDS[kind.name] = kind
    return kind


def kind(name: str) -> Kind:
    """The registered kind ``name``; AttnReportError naming the known ones otherwise."""
    if name not in KINDS:
        raise AttnReportError(f"unknown intervention kind {name!r}; known: {', '.join(KINDS)}")
    return KINDS[name]


def on_target(target: str, change: Callable[[torch.Tensor], torch.Tensor]) -> Modifier:
    """A ``Modifier`` that applies ``change`` to q, k or v (``target``: "Q", "K" or "V")
    of every head and leaves the other two as they are."""
    index = TARGETS.index(target)

    def modify(qkv: QKV) -> QKV:
        changed = list(qkv)
        changed[index] = change(qkv[index])
        return tuple(changed)  # type: ignore[return-value]

    return modify
