"""The grids: one pass per cell of a kind (target x setting) at one layer, each with its
KL against an unmodified pass over the same input and its probabilities at the observed
layers. ``cells`` runs any registered kind; the three grids the report draws are it with
the kinds ``scale``, ``mean`` and ``mean_before_rotation``."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from attnreport.interventions.kinds import Kind, kind
from attnreport.interventions.passes import (
    Outcome,
    identity,
    observed_layers,
    outcome_kl,
    run_modified,
)
from attnreport.models.attending import attention_layers, spec_at
from attnreport.models.layout import LayerSpec


@dataclass(frozen=True)
class GridCell:
    target: str  # "Q", "K" or "V" (or a kind's own tensor)
    setting: float | int  # epsilon (scaling grid) or sentence index (mean grids)
    outcome: Outcome
    kl: torch.Tensor  # (query,) nats


def observed(layer: int, layers: list[int]) -> tuple[int, ...]:
    """The layers a grid observes (``observed_layers``), once each, in order; ``layers``: the
    block numbers of the attention layers."""
    return tuple(sorted(set(observed_layers(layer, layers).values())))


def cells(
    model: nn.Module,
    specs: list[LayerSpec],
    input_ids: torch.Tensor,
    layer: int,
    kind_of: Kind,
    base: Outcome,
    settings: tuple[float | None, ...] = (None,),
    label: int | None = None,
    leading: int | None = None,
) -> list[GridCell]:
    """One cell per (target, setting) of ``kind_of`` at ``layer``, targets outer; ``base``:
    the unmodified pass over ``input_ids`` (its prefix is replayed). A cell's ``setting``
    is ``label`` when given (the mean grids: the sentence), else the kind's setting. Cells
    keep only their observed probabilities and KL (``Outcome.kept``)."""
    spec, observe = spec_at(specs, layer), tuple(sorted(base.probs))
    if not kind_of.applies(spec):
        return []
    out = []
    for target in kind_of.targets:
        for setting in settings:
            change = kind_of.change(spec, target, setting)
            outcome = run_modified(model, specs, input_ids, layer, change.modify, observe,
                                   base.prefix, leading, list(change.hooks))  # fmt: skip
            cell = setting if label is None else label
            out.append(GridCell(target, cell, outcome.kept(), outcome_kl(model, base, outcome)))  # type: ignore[arg-type]
    return out


def baseline(
    model: nn.Module, specs: list[LayerSpec], input_ids: torch.Tensor, layer: int,
    leading: int | None = None,
) -> Outcome:  # fmt: skip
    """The unmodified pass a grid's cells are held against (observing ``observed``)."""
    observe = observed(layer, attention_layers(specs))
    return run_modified(model, specs, input_ids, layer, identity, observe, (), leading)


def scaling_grid(
    model: nn.Module,
    specs: list[LayerSpec],
    input_ids: torch.Tensor,
    layer: int,
    epsilons: tuple[float, ...],
    leading: int | None = None,
    base: Outcome | None = None,
) -> tuple[Outcome, list[GridCell]]:
    """Baseline and one cell per (target, epsilon): rows Q or K (one intervention, "QK")
    and V; columns epsilons. An input longer than ``leading`` tokens is observed over its
    first ``leading`` queries. ``base``: the input's unmodified pass when already run (its
    prefix is replayed), else one is run."""
    base = base or baseline(model, specs, input_ids, layer, leading)
    grid = cells(model, specs, input_ids, layer, kind("scale"), base, epsilons, None, leading)
    return base.kept(), grid


def mean_grid(
    model: nn.Module,
    specs: list[LayerSpec],
    inputs: dict[int, torch.Tensor],
    layer: int,
    leading: int | None = None,
    kind_name: str = "mean",
    bases: dict[int, Outcome] | None = None,
) -> tuple[dict[int, Outcome], list[GridCell]]:
    """Baselines per input and one cell per (input, target) of ``kind_name``: rows inputs;
    columns Q, K, V (those of the kind). No baselines and no cells when the kind does not
    apply at ``layer``. ``bases``: unmodified passes already run, by input."""
    if not kind(kind_name).applies(spec_at(specs, layer)):
        return {}, []
    baselines, grid = {}, []
    for index, ids in inputs.items():
        base = (bases or {}).get(index) or baseline(model, specs, ids, layer, leading)
        grid += cells(model, specs, ids, layer, kind(kind_name), base, (None,), index, leading)
        baselines[index] = base.kept()
    return baselines, grid


# fmt: off
def mean_grid_before_rotation(model: nn.Module, specs: list[LayerSpec],
                              inputs: dict[int, torch.Tensor], layer: int,
                              leading: int | None = None,
                              bases: dict[int, Outcome] | None = None) -> list[GridCell]:
    # fmt: on
    """Q and K replaced by their mean taken before the rotary rotation, one cell per
    (input, target); empty for a model that does not rotate q and k."""
    return mean_grid(model, specs, inputs, layer, leading, "mean_before_rotation", bases)[1]


@dataclass(frozen=True)
class InputGrids:
    """Every cell one input takes part in, and its unmodified pass (observations only)."""

    base: Outcome
    scaling: list[GridCell]  # (target, epsilon), when the input is scaled
    mean: list[GridCell]  # Q, K, V replaced by their mean, when the input is a mean input
    before_rotation: list[GridCell]  # Q and K averaged before the rotation (rotary models)


def input_grids(
    model: nn.Module,
    specs: list[LayerSpec],
    index: int,
    input_ids: torch.Tensor,
    layer: int,
    epsilons: tuple[float, ...] | None,
    meaned: bool,
    leading: int | None = None,
) -> InputGrids:
    """The cells of input ``index`` at ``layer``, on one unmodified pass: the scaling
    grid's when ``epsilons`` (None: the input is not scaled), the mean grids' when
    ``meaned``. One input at a time: only its own pass's next-token distribution is held."""
    base = baseline(model, specs, input_ids, layer, leading)
    scaled = [] if epsilons is None else scaling_grid(
        model, specs, input_ids, layer, epsilons, leading, base
    )[1]  # fmt: skip
    one = {index: input_ids}
    mean = mean_grid(model, specs, one, layer, leading, bases={index: base})[1] if meaned else []
    before = (
        mean_grid_before_rotation(model, specs, one, layer, leading, {index: base}) if meaned else []
    )
    return InputGrids(base.kept(), scaled, mean, before)
