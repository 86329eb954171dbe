"""The mean: q, k or v of each head replaced by its mean over token positions (as
scored: after the rotary rotation, where the model has one)."""

from __future__ import annotations

from attnreport.interventions.kinds import Change, Kind, Modifier, on_target, register
from attnreport.models.layout import LayerSpec


def mean_over_positions(target: str) -> Modifier:
    """Replace q, k or v of each head by its mean over token positions."""
    return on_target(target, lambda x: x.mean(dim=1, keepdim=True).expand_as(x))


def _change(_spec: LayerSpec, target: str, _setting: float | None) -> Change:
    return Change(mean_over_positions(target))


MEAN = register(Kind("mean", _change))
