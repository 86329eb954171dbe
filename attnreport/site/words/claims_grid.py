"""Claims the intervention grids test: Q/K scaling -> uniform, V scaling invisible at its
own layer, and the mean replacement of K against the source's figure (seed 003).

Inputs are the typed interventions (``results.interventions``): each cell's
``observations`` holds, for "same", "next" and "last", one attention map per head, a
list of rows, row i holding the probabilities of query i over the keys it can see.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from attnreport.results.interventions import GridCell, Interventions, ScalingGrid
from attnreport.site.words import effects, fit
from attnreport.site.words.claims import (
    UNCHANGED_TOL,
    UNIFORM_TOL,
    Claim,
    sink_heads_change_little,
    sink_on_any_first_token,
    sink_values_small,
)
from attnreport.site.words.readings import columns, per_head
from attnreport.site.words.verdicts import INCONCLUSIVE, Evidence, Verdict, verdict
from attnreport.site.words.wording import count, number, quantity

Maps = Sequence[Sequence[Sequence[float]]]  # head -> query -> key


def uniform_gaps(maps: Maps) -> list[float]:
    """Per head, the largest |p_ij - 1/(i+1)|: 0 when every query spreads its weight evenly
    over the keys it sees (rows as stored)."""
    return [max((max(abs(p - 1 / len(row)) for p in row) for row in head if row), default=0.0)
            for head in maps]  # fmt: skip


def changes(maps: Maps, base: Maps) -> list[float]:
    """Per head, the largest |p - p_base| between two sets of maps of the same shape."""
    return [max((max(abs(a - b) for a, b in zip(r, rb, strict=True)) for r, rb in zip(h, hb, strict=True) if r),
                default=0.0) for h, hb in zip(maps, base, strict=True)]  # fmt: skip


def cell_gaps(cell: GridCell, observation: str = "same") -> list[float]:
    """``uniform_gaps`` of a cell's maps; a long input's cell (kept as blocks) carries
    them, read off its exact rows (``results.observed_blocks``)."""
    if cell.gaps is not None:
        return list(cell.gaps[observation])
    return uniform_gaps(cell.observations[observation])


def cell_changes(cell: GridCell, base: Any, observation: str) -> list[float]:
    """``changes`` of a cell's maps against the unmodified ``base`` (a long input's cell
    carries them)."""
    if cell.moved is not None:
        return list(cell.moved[observation])
    return changes(cell.observations[observation], base[observation])


def _smallest(grid: ScalingGrid, targets: Sequence[str]) -> tuple[float, list[GridCell]]:
    """The smallest epsilon of ``targets`` and its cell on every input scaled (schema 9
    keeps each one's gaps and changes; older results scaled one input)."""
    cells = [c for c in grid.cells if c.target in targets]
    eps = min((float(c.setting) for c in cells), default=0.0)
    return eps, [c for c in cells if float(c.setting) == eps]


def _head_max(per_input: Sequence[Sequence[float]]) -> list[float]:
    """Per head, the largest value over the inputs."""
    return [max(v) for v in zip(*per_input, strict=True)] if per_input else []


def _over(n: int) -> str:
    """`` (on 8 sentences)`` when the grid ran on several, else "": the largest value over
    them is the one given."""
    return f" (on {n} sentences)" if n > 1 else ""


def qk_scaling_uniform(iv: Interventions) -> Claim | None:
    """Seeds 000-002: scaling Q or K by a small epsilon makes attention uniform over the
    allowed keys. Tested at the smallest epsilon on every head of the intervention layer;
    a head breaks it when its weights are more than ``UNIFORM_TOL`` from uniform."""
    grid = iv.scaling
    eps, cells = _smallest(grid, ("Q", "K", "QK"))
    if not cells:
        return None
    layer = iv.layer
    targets = sorted({c.target for c in cells}, key=lambda t: effects.ORDER.get(t, 3))
    gaps = {t: _head_max([cell_gaps(c) for c in cells if c.target == t]) for t in targets}
    n = len({grid.sentence_of(c) for c in cells})
    broken = sorted({(layer, h) for g in gaps.values() for h, v in enumerate(g) if v > UNIFORM_TOL})
    tested = sum(len(g) for g in gaps.values())
    ev = Evidence(1.0 if tested else 0.0, n, tested, len(broken), needed=1)
    kl = {c.target: effects.mean_kl(c) for c in cells}  # Q and K apart: one input (schema < 9)
    largest = " and ".join(
        f"{effects.target_words(t)} {number(max(g), 2)}"
        for t, g in sorted(gaps.items(), key=lambda tg: effects.ORDER.get(tg[0], 3))
    )
    same = (
        "; Q and K give the same KL, " + quantity(kl["Q"], "nat")
        if len(set(kl.values())) == 1 and len(kl) == 2
        else ""
    )
    text = (
        f"Scaled by {eps:g} in layer {layer}{_over(n)}, the largest gap between a head's weights and "
        f"uniform over the allowed keys is {largest}{same}. Scaling Q or K by ε is one "
        "intervention: every score becomes s = ε q·k either way."
    )
    breaks = (
        f"{fit.heads_words(broken)} stay more than {UNIFORM_TOL:g} from uniform" if broken else ""
    )
    return Claim("qk-uniform", "Scaling Q or K by ε → 0 makes attention uniform over the "
                 "allowed keys.", "seeds", verdict(ev), text, breaks, "scaling-grid",
                 grid.sentence)  # fmt: skip


def _moved(change: float) -> str:
    """How far the scaled layer's own weights moved, in words: ``do not move at all``
    (exactly 0) or ``move at most 0.0049``."""
    return "do not move at all" if change == 0 else f"move at most {number(change, 2)}"


def v_scaling_next_layer(iv: Interventions) -> Claim | None:
    """Seeds 000-002: scaling V leaves the layer's own weights and moves the next layer's.

    Effect: the next layer's largest weight change minus ``UNIFORM_TOL`` (it must move);
    a head of the intervention layer breaks it when its weights moved by more than
    ``UNCHANGED_TOL``. When no attention layer follows the intervention layer (a hybrid's
    last attention layer: the "next" observed is the layer itself) only the first half
    can be tested: the verdict is inconclusive and says why."""
    grid = iv.scaling
    eps, cells = _smallest(grid, ("V",))
    if not cells or not grid.baseline:
        return None
    base = grid.baseline  # the drawn input's: older cells without ``moved`` are its
    own = _head_max([cell_changes(c, base, "same") for c in cells])
    nxt = _head_max([cell_changes(c, base, "next") for c in cells])
    layer, n = iv.layer, len({grid.sentence_of(c) for c in cells})
    next_layer = iv.observed_layers.get("next", layer + 1)
    broken = [(layer, h) for h, v in enumerate(own) if v > UNCHANGED_TOL]
    ev = Evidence(max(nxt, default=0.0) - UNIFORM_TOL, n, len(own), len(broken), needed=1)
    spread = next(  # its KL over every input scaled, as the findings give it
        e.kl for e in effects.scaling_effects(grid) if (e.target, e.setting) == ("V", eps)
    )
    kl = f"the next-token distribution's KL is {effects.kl_words(spread)}"
    scaled = f"V scaled by {eps:g} in layer {layer}{_over(n)}"
    moved = _moved(max(own, default=0.0))
    if next_layer <= layer:  # no attention layer after it to show the change
        text = (
            f"{scaled}, the last attention layer: its weights {moved}; no later "
            f"attention layer can show the change, but {kl}."
        )
        found = Verdict(INCONCLUSIVE, f"no attention layer after layer {layer}")
    else:
        text = (
            f"{scaled}: the layer's own weights {moved}, layer {next_layer}'s move up to "
            f"{number(max(nxt, default=0.0), 2)}; {kl}."
        )
        found = verdict(ev)
    breaks = f"{fit.heads_words(broken)} change their own weights" if broken else ""
    return Claim("v-next-layer", "Scaling V leaves the layer's own weights unchanged and moves "
                 "the next layer's.", "seeds", found, text, breaks, "scaling-grid",
                 grid.sentence)  # fmt: skip


def _k_gaps(cells: Sequence[GridCell]) -> dict[int, float]:
    """Per sentence, the largest gap to uniform of any head's K-mean map (same layer)."""
    return {int(c.setting): max(cell_gaps(c), default=0.0)
            for c in cells if c.target == "K"}  # fmt: skip


def mean_k_structured(iv: Interventions) -> Claim | None:
    """Seed 003: replacing K by its mean over positions leaves structured attention maps.

    Two readings. After the rotary rotation (``cells``: k as the attention function
    receives it) every key is one vector and attention is uniform by construction. Before
    it (``before_rotation``, rotated again per position) keys keep their positions.
    The claim is tested on the reading that can reproduce the figure: the one before the
    rotation when the run has it. A sentence breaks it when every head's map is within
    ``UNIFORM_TOL`` of uniform; effect: mean of the largest gaps minus ``UNIFORM_TOL``."""
    after = _k_gaps(iv.mean.cells)
    before = _k_gaps(iv.mean.before_rotation)
    tested = before or after
    if not tested:
        return None
    values = list(tested.values())
    broken = sorted(s for s, g in tested.items() if g <= UNIFORM_TOL)
    ev = Evidence(float(np.mean(values)) - UNIFORM_TOL, len(values), len(values), len(broken),
                  needed=1)  # fmt: skip
    layer = iv.layer
    text = (
        f"Mean taken after the rotary rotation (what the attention function receives): the "
        f"largest gap to uniform attention in layer {layer} is "
        f"{number(max(after.values(), default=0.0), 2)}; every key is then the same vector, "
        "so attention is uniform by construction and cannot reproduce seed 003's structured "
        "K maps. "
    )
    if before:
        top = max(before.values())
        which = "the mean taken before the rotation" if top > UNIFORM_TOL else "neither reading"
        text += (
            f"Mean taken before the rotation, then rotated per position: the largest gap is "
            f"{number(top, 2)} over {count(len(before), 'sentence')}, so {which} reproduces "
            "the source figure."
        )
    else:
        text += "The reading with the mean taken before the rotation is not in this run's results."
    breaks = f"sentences {', '.join(str(s) for s in broken)} give uniform K maps" if broken else ""
    return Claim("mean-k", "Replacing K by its mean over the positions leaves structured "
                 "attention maps (the source figure).", "seed003", verdict(ev), text, breaks,
                 "mean-grid", min(tested))  # fmt: skip


def tested_claims(
    set_tables: Mapping[str, Any],
    interventions: Interventions | None,
    first_ids: Sequence[int],
    bos_added: bool,
) -> list[Claim]:
    """Every claim this run's results can test, in reading order.

    set_tables: ``set.json``'s tables; interventions: the typed grids (None: none);
    first_ids[s]: the first token id of sentence s; bos_added: whether a BOS came first.
    """
    out: list[Claim | None] = []
    first = per_head(set_tables.get("focus_pooled"), "first_focus")
    magnitude = per_head(set_tables.get("impact_pooled"), "magnitude")
    by_sentence = columns(set_tables.get("focus_by_sentence"))
    if first and magnitude:
        n = len({int(s) for s in by_sentence.get("sentence", [])}) or len(first_ids)
        out.append(sink_heads_change_little(first, magnitude, n))
    if by_sentence:
        bos = set_tables.get("bos_contrast")
        out.append(sink_on_any_first_token(by_sentence, first_ids, bos_added, bos))
    if first and set_tables.get("value_norms"):
        out.append(sink_values_small(set_tables["value_norms"], first))
    if interventions is not None:
        out += [
            f(interventions) for f in (qk_scaling_uniform, v_scaling_next_layer, mean_k_structured)
        ]
    return [c for c in out if c is not None]
