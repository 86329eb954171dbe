"""Measures of the intervention grids' attention maps that the checks and the seed-003
claim read (no claim of its own).

A cell's ``observations`` hold, for "same", "next" and "last", one map per head: a list
of rows, row i the probabilities of query i over the keys it can see (``None`` where a
window hides a key). A long input's cell (kept as blocks) carries its gaps and changes,
read off its exact rows (``results.observed_blocks``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from attnreport.results.interventions import GridCell, ScalingGrid
from attnreport.results.observed_blocks import localities

Maps = Sequence[Sequence[Sequence[float | None]]]  # head -> query -> key
UNIFORM_TOL = 0.01  # largest |p - uniform| that still reads as uniform attention
UNCHANGED_TOL = 1e-4  # largest |p - p_base| that reads as unchanged (results keep 6 decimals)


def _seen(row: Sequence[float | None]) -> list[float]:
    return [float(p) for p in row if p is not None]


def uniform_gaps(maps: Maps) -> list[float]:
    """Per head, the largest |p_ij - 1/(keys query i sees)|: 0 when every query spreads its
    weight evenly over the keys it sees."""
    out = []
    for head in maps:
        gaps = [max(abs(p - 1 / len(r)) for p in r) for r in map(_seen, head) if r]
        out.append(max(gaps, default=0.0))
    return out


def changes(maps: Maps, base: Maps) -> list[float]:
    """Per head, the largest |p - p_base| between two sets of maps of the same shape."""
    out = []
    for head, base_head in zip(maps, base, strict=True):
        moved = [
            max(abs(a - b) for a, b in zip(_seen(r), _seen(rb), strict=True))
            for r, rb in zip(head, base_head, strict=True)
            if _seen(r)
        ]
        out.append(max(moved, default=0.0))
    return out


def locality(head: Sequence[Sequence[float | None]]) -> float | None:
    """``observed_blocks.localities`` of one map kept whole (rows as stored: ``None``
    where a window hides a key)."""
    m = len(head)
    probs = np.zeros((1, m, m))
    allowed = np.zeros((m, m), dtype=bool)
    for i, row in enumerate(head):
        for j, p in enumerate(row):
            if p is not None:
                probs[0, i, j], allowed[i, j] = float(p), True
    return localities(probs, allowed)[0]


def cell_localities(cell: GridCell, observation: str = "same") -> list[float | None]:
    """Per head, the locality of a cell's maps (a long input's cell carries them; None for
    one stored before schema 9, which has no way to read it)."""
    if cell.blocks is not None:
        stored = (cell.locality or {}).get(observation)
        return list(stored) if stored is not None else [None] * len(cell.observations[observation])
    return [locality(head) for head in cell.observations[observation]]


def cell_gaps(cell: GridCell, observation: str = "same") -> list[float]:
    """``uniform_gaps`` of a cell's maps (a long input's cell carries them)."""
    if cell.gaps is not None:
        return list(cell.gaps[observation])
    return uniform_gaps(cell.observations[observation])


def cell_changes(cell: GridCell, base: Any, observation: str) -> list[float]:
    """``changes`` of a cell's maps against the unmodified ``base`` (a long input's cell
    carries them)."""
    if cell.moved is not None:
        return list(cell.moved[observation])
    return changes(cell.observations[observation], base[observation])


def smallest_cells(grid: ScalingGrid, targets: Sequence[str]) -> tuple[float, list[GridCell]]:
    """The smallest epsilon of ``targets`` in the scaling grid and its cells on every input
    scaled (schema 9 keeps each one's gaps and changes; older results scaled one input)."""
    cells = [c for c in grid.cells if c.target in targets]
    eps = min((float(c.setting) for c in cells), default=0.0)
    return eps, [c for c in cells if float(c.setting) == eps]


def head_max(per_input: Sequence[Sequence[float]]) -> list[float]:
    """Per head, the largest value over the inputs (a check's bound holds on every one)."""
    return [max(v) for v in zip(*per_input, strict=True)] if per_input else []
