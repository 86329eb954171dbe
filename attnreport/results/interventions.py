"""``interventions.json`` as typed values: the scaling grid and the mean grid of one layer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from attnreport.jsontypes import Json
from attnreport.results.manifest import SCHEMA, Observations, need


@dataclass(frozen=True)
class GridCell:
    """One intervention: ``target`` "Q"|"K"|"V" and its setting (an epsilon, or the
    sentence whose mean replaced the target); ``kl`` has one value per position."""

    target: str
    setting: float | int
    observations: Observations
    kl: list[float]
    # an input of more than 32 observed positions (schema 7, ``observed_blocks``): ``blocks`` is
    # (block size, positions observed) and ``observations`` (and the grid's baseline of
    # the same input) hold block values; ``gaps`` and ``moved`` are per observation and
    # head, read off the exact rows. None for an input kept whole.
    blocks: tuple[int, int] | None = None
    gaps: dict[str, list[float]] | None = None
    moved: dict[str, list[float]] | None = None
    # per observation and head, ``observed_blocks.localities`` off the exact rows (schema 9)
    locality: dict[str, list[float | None]] | None = None


@dataclass(frozen=True)
class ScalingGrid:
    sentence: int
    baseline: Observations
    cells: tuple[GridCell, ...]


@dataclass(frozen=True)
class MeanGrid:
    sentences: tuple[int, ...]
    baselines: dict[int, Observations]
    cells: tuple[GridCell, ...]
    # Q and K with the mean taken before the rotary rotation, then rotated per position
    # (schema 5; none for a model without rotation and in older folders)
    before_rotation: tuple[GridCell, ...] = ()


@dataclass(frozen=True)
class Interventions:
    layer: int
    observed_layers: dict[str, int]  # "same", "next", "last" -> layer
    where: str  # where in the attention the interventions act, in words
    epsilons: tuple[float, ...]
    scaling: ScalingGrid
    mean: MeanGrid


def _cell(obj: Any, key: str, where: str) -> GridCell:
    blocks = obj.get("blocks")
    return GridCell(
        target=str(need(obj, "target", where)),
        setting=need(obj, key, where),
        observations=need(obj, "observations", where),
        kl=list(need(obj, "kl", where)),
        blocks=None if blocks is None else (int(blocks[0]), int(blocks[1])),
        gaps=obj.get("gaps"),
        moved=obj.get("moved"),
        locality=obj.get("locality"),
    )


def _cell_json(cell: GridCell, key: str) -> Json:
    out: Json = {
        "target": cell.target,
        key: cell.setting,
        "observations": cell.observations,
        "kl": cell.kl,
    }
    if cell.blocks is not None:
        out.update(blocks=list(cell.blocks), gaps=cell.gaps, moved=cell.moved)
        if cell.locality is not None:
            out["locality"] = cell.locality
    return out


def interventions_from_json(obj: Any, where: str = "interventions.json") -> Interventions:
    scaling, mean = need(obj, "scaling", where), need(obj, "mean", where)
    return Interventions(
        layer=int(need(obj, "layer", where)),
        observed_layers={str(k): int(v) for k, v in need(obj, "observed_layers", where).items()},
        where=str(obj.get("where", "")),
        epsilons=tuple(need(obj, "epsilons", where)),
        scaling=ScalingGrid(
            sentence=int(need(scaling, "sentence", where)),
            baseline=need(scaling, "baseline", where),
            cells=tuple(_cell(c, "epsilon", where) for c in need(scaling, "cells", where)),
        ),
        mean=MeanGrid(
            sentences=tuple(int(s) for s in need(mean, "sentences", where)),
            baselines={int(k): v for k, v in need(mean, "baselines", where).items()},
            cells=tuple(_cell(c, "sentence", where) for c in need(mean, "cells", where)),
            before_rotation=tuple(
                _cell(c, "sentence", where) for c in mean.get("cells_before_rotation") or []
            ),
        ),
    )


def interventions_to_json(iv: Interventions) -> Json:
    return {
        "schema": SCHEMA,
        "layer": iv.layer,
        "observed_layers": dict(iv.observed_layers),
        "where": iv.where,
        "epsilons": list(iv.epsilons),
        "scaling": {
            "sentence": iv.scaling.sentence,
            "baseline": iv.scaling.baseline,
            "cells": [_cell_json(c, "epsilon") for c in iv.scaling.cells],
        },
        "mean": {
            "sentences": list(iv.mean.sentences),
            "baselines": {str(k): v for k, v in iv.mean.baselines.items()},
            "cells": [_cell_json(c, "sentence") for c in iv.mean.cells],
            **(
                {
                    "cells_before_rotation": [
                        _cell_json(c, "sentence") for c in iv.mean.before_rotation
                    ]
                }
                if iv.mean.before_rotation
                else {}
            ),
        },
    }
