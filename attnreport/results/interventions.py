"""``interventions.json`` as typed values: the scaling grid and the mean grid of one layer."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from attnreport.jsontypes import Json
from attnreport.results.manifest import SCHEMA, Observations, need

# A cell that changes V keeps no observation of its own layer (schema 9): v does not enter
# that layer's scores, so its maps there are the unmodified pass's by construction (its
# ``moved["same"]`` records the pass's own check); loading fills them in from the baseline.
UNCHANGED_BY_V = "same"
# the mean grid's rows drawn: more rows of maps are no easier to read, and weigh a page down
DRAWN_MEAN_INPUTS = 3


@dataclass(frozen=True)
class GridCell:
    """One intervention: ``target`` "Q"|"K"|"V", or "QK" (Q or K scaled: one intervention,
    schema 9) and its setting (an epsilon, or the sentence whose mean replaced the target);
    ``kl`` has one value per position; ``sentence``: the input of a scaling cell (schema 9;
    None: the grid's ``sentence``)."""

    target: str
    setting: float | int
    observations: Observations  # {} for a scaling cell of an input whose maps are not drawn
    kl: list[float]
    # an input of more than 32 observed positions (schema 7, ``observed_blocks``): ``blocks`` is
    # (block size, positions observed) and ``observations`` (and the grid's baseline of
    # the same input) hold block values. None for an input kept whole.
    blocks: tuple[int, int] | None = None
    # per observation and head, read off the exact rows: the largest distance to uniform
    # attention and the largest change against the unmodified pass (every cell from schema
    # 9; before it, only the cells of an input kept as blocks)
    gaps: dict[str, list[float]] | None = None
    moved: dict[str, list[float]] | None = None
    # per observation and head, ``observed_blocks.localities`` off the exact rows (schema 9)
    locality: dict[str, list[float | None]] | None = None
    sentence: int | None = None


@dataclass(frozen=True)
class ScalingGrid:
    sentence: int  # the input whose maps are drawn
    baseline: Observations  # its unmodified pass
    cells: tuple[GridCell, ...]  # every input's (another input's keep no observations)
    sentences: tuple[int, ...] = ()  # every input scaled (schema 9; before: ``sentence``)

    @property
    def inputs(self) -> tuple[int, ...]:
        return self.sentences or (self.sentence,)

    def sentence_of(self, cell: GridCell) -> int:
        return self.sentence if cell.sentence is None else cell.sentence

    @property
    def shown(self) -> tuple[GridCell, ...]:
        """The cells of the input whose maps are drawn."""
        return tuple(c for c in self.cells if self.sentence_of(c) == self.sentence)

    def groups(self) -> dict[tuple[str, float], list[GridCell]]:
        """(target, epsilon) -> that intervention's cell on every input, in file order."""
        out: dict[tuple[str, float], list[GridCell]] = {}
        for cell in self.cells:
            out.setdefault((cell.target, float(cell.setting)), []).append(cell)
        return out


@dataclass(frozen=True)
class MeanGrid:
    sentences: tuple[int, ...]
    baselines: dict[int, Observations]
    cells: tuple[GridCell, ...]
    # Q and K with the mean taken before the rotary rotation, then rotated per position
    # (schema 5; none for a model without rotation and in older folders)
    before_rotation: tuple[GridCell, ...] = ()
    # each input's tokens, as the sentence files give them (written since 0.x of schema 9,
    # so that an input needs no sentence file of its own; older folders keep its file)
    tokens: dict[int, tuple[str, ...]] = field(default_factory=dict)

    @property
    def drawn(self) -> tuple[int, ...]:
        """The inputs whose maps the grid figures draw: the first ``DRAWN_MEAN_INPUTS`` (a
        claim or a finding reads every input)."""
        return self.sentences[:DRAWN_MEAN_INPUTS]


@dataclass(frozen=True)
class Interventions:
    layer: int
    observed_layers: dict[str, int]  # "same", "next", "last" -> layer
    where: str  # where in the attention the interventions act, in words
    epsilons: tuple[float, ...]
    scaling: ScalingGrid
    mean: MeanGrid


def _cell(obj: Any, key: str, where: str, base: Observations | None) -> GridCell:
    blocks, sentence = obj.get("blocks"), obj.get("sentence") if key != "sentence" else None
    cell = GridCell(
        target=str(need(obj, "target", where)),
        setting=need(obj, key, where),
        observations=dict(need(obj, "observations", where)),
        kl=list(need(obj, "kl", where)),
        blocks=None if blocks is None else (int(blocks[0]), int(blocks[1])),
        gaps=obj.get("gaps"),
        moved=obj.get("moved"),
        locality=obj.get("locality"),
        sentence=None if sentence is None else int(sentence),
    )
    seen = cell.observations
    if cell.target == "V" and seen and UNCHANGED_BY_V not in seen and base:
        seen[UNCHANGED_BY_V] = base[UNCHANGED_BY_V]
    return cell


def _cell_json(cell: GridCell, key: str) -> Json:
    seen = dict(cell.observations)
    if cell.target == "V" and cell.moved is not None:  # schema 9: the baseline's by construction
        seen.pop(UNCHANGED_BY_V, None)
    out: Json = {"target": cell.target, key: cell.setting, "observations": seen, "kl": cell.kl}
    if cell.sentence is not None:
        out["sentence"] = cell.sentence
    if cell.blocks is not None:
        out["blocks"] = list(cell.blocks)
    out.update({k: v for k, v in (("gaps", cell.gaps), ("moved", cell.moved)) if v is not None})
    if cell.locality is not None:
        out["locality"] = cell.locality
    return out


def interventions_from_json(obj: Any, where: str = "interventions.json") -> Interventions:
    scaling, mean = need(obj, "scaling", where), need(obj, "mean", where)
    shown, bases = need(scaling, "baseline", where), need(mean, "baselines", where)
    baselines = {int(k): v for k, v in bases.items()}
    first = int(need(scaling, "sentence", where))

    def mean_cells(listed: Any) -> tuple[GridCell, ...]:
        return tuple(
            _cell(c, "sentence", where, baselines.get(int(need(c, "sentence", where))))
            for c in listed
        )

    def scaling_cell(c: Any) -> GridCell:
        return _cell(c, "epsilon", where, shown if c.get("sentence", first) == first else None)

    return Interventions(
        layer=int(need(obj, "layer", where)),
        observed_layers={str(k): int(v) for k, v in need(obj, "observed_layers", where).items()},
        where=str(obj.get("where", "")),
        epsilons=tuple(need(obj, "epsilons", where)),
        scaling=ScalingGrid(
            sentence=first,
            baseline=shown,
            cells=tuple(scaling_cell(c) for c in need(scaling, "cells", where)),
            sentences=tuple(int(s) for s in scaling.get("sentences", ())),
        ),
        mean=MeanGrid(
            sentences=tuple(int(s) for s in need(mean, "sentences", where)),
            baselines=baselines,
            cells=mean_cells(need(mean, "cells", where)),
            before_rotation=mean_cells(mean.get("cells_before_rotation") or []),
            tokens={
                int(k): tuple(str(t) for t in v) for k, v in (mean.get("tokens") or {}).items()
            },
        ),
    )


def interventions_to_json(iv: Interventions) -> Json:
    rotated = [_cell_json(c, "sentence") for c in iv.mean.before_rotation]
    return {
        "schema": SCHEMA,
        "layer": iv.layer,
        "observed_layers": dict(iv.observed_layers),
        "where": iv.where,
        "epsilons": list(iv.epsilons),
        "scaling": {
            "sentence": iv.scaling.sentence,
            **({"sentences": list(iv.scaling.sentences)} if iv.scaling.sentences else {}),
            "baseline": iv.scaling.baseline,
            "cells": [_cell_json(c, "epsilon") for c in iv.scaling.cells],
        },
        "mean": {
            "sentences": list(iv.mean.sentences),
            "baselines": {str(k): v for k, v in iv.mean.baselines.items()},
            "cells": [_cell_json(c, "sentence") for c in iv.mean.cells],
            **({"cells_before_rotation": rotated} if rotated else {}),
            **(
                {"tokens": {str(k): list(v) for k, v in iv.mean.tokens.items()}}
                if iv.mean.tokens
                else {}
            ),
        },
    }


__all__ = [
    "GridCell", "Interventions", "MeanGrid", "ScalingGrid", "interventions_from_json",
    "interventions_to_json",
]  # fmt: skip
