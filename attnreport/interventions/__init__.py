"""Interventions: real forward passes with one layer's attention changed.

- ``kinds``: the registry of intervention kinds, one small module each: ``scaling``
  (q, k or v times an epsilon), ``mean`` (the mean over positions), ``mean_rotation``
  (the mean taken before the rotary rotation);
- ``passes``: one changed pass (``run_modified``) and what it showed (``Outcome``);
- ``grids``: one cell per (target, setting) of any kind (``cells``), the three grids the
  report draws, and every cell of one input on one unmodified pass (``input_grids``).

A new kind is a module here that ``register``s a ``Kind``, imported on the line below.
"""

from __future__ import annotations

from attnreport.interventions import mean, mean_rotation, scaling  # noqa: F401  (the kinds)
from attnreport.interventions.grids import (
    GridCell,
    InputGrids,
    baseline,
    cells,
    input_grids,
    mean_grid,
    mean_grid_before_rotation,
    observed,
    scaling_grid,
)
from attnreport.interventions.kinds import (
    KINDS,
    QKV,
    Change,
    Kind,
    Modifier,
    identity,
    kind,
    on_target,
    register,
)
from attnreport.interventions.mean import mean_over_positions
from attnreport.interventions.mean_rotation import mean_before_rotation
from attnreport.interventions.passes import (
    Outcome,
    next_token_kl,
    observed_layers,
    outcome_kl,
    replayed_blocks,
    run_modified,
)
from attnreport.interventions.scaling import scale

__all__ = [
    "KINDS", "QKV", "Change", "GridCell", "InputGrids", "Kind", "Modifier", "Outcome", "baseline", "cells",
    "identity", "input_grids", "kind", "mean_before_rotation", "mean_grid", "mean_grid_before_rotation",
    "mean_over_positions", "next_token_kl", "observed", "observed_layers", "on_target",
    "outcome_kl", "register", "replayed_blocks", "run_modified", "scale", "scaling_grid",
]  # fmt: skip
