"""What the interventions did, in words: each intervention's KL, every target said.

Cells are the typed ``results.interventions.GridCell``: target (Q, K, V), setting (an
epsilon in the scaling grid, a sentence in the mean grid), and ``kl``, KL(p_base ||
p_modified) of the next-token distribution at each position, in nats.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from attnreport.analyses.grid_kl import Spread, above_on_every_sentence, grid_kl
from attnreport.analyses.kl import sentence_kl
from attnreport.results.interventions import GridCell, MeanGrid, ScalingGrid
from attnreport.site.words.wording import join_and, number, quantity

TIE = 1e-9  # KL values closer than this (relative) are the same effect
# A KL divergence below this is the float32 round-off of the log-probabilities it compares
# (about 1e-7 relative on log-probabilities of order 10), not an effect: it reads as 0.
FLOAT32_NATS = 1e-6
FLOOR_TEXT = "1e-6"
ORDER = {"Q": 0, "K": 1, "QK": 0, "V": 2}
# What a post-attention norm does (Gemma 2 and 3, OLMo 2), after "the model" or "This model"
POST_NORM = (
    "normalises the attention block's output before adding it to the hidden state (a "
    "post-attention norm)"
)


@dataclass(frozen=True)
class PostNorm:
    """What the results say of a post-attention norm: whether the model has one
    (``present``), and whether its update sizes were taken before it (``sizes_before``:
    results before schema 8) instead of as each head's share of what the norm adds."""

    present: bool = False
    sizes_before: bool = False

    @property
    def sizes_after(self) -> bool:
        """The model has one and its update sizes are the heads' shares after it (schema 8)."""
        return self.present and not self.sizes_before


NO_POST_NORM = PostNorm()


def nats(value: float) -> str:
    """A KL divergence in words: ``0.35 nats``, or below ``FLOAT32_NATS`` ``0 nats within
    float32 round-off`` (the Methods state the bound), never a value below its own noise."""
    if abs(float(value)) < FLOAT32_NATS:
        return "0 nats within float32 round-off"
    return quantity(value, "nat")


def mean_kl(cell: GridCell) -> float:
    """A cell's KL on its sentence: the mean of its per-position values, in nats (0 for
    none; ``analyses.kl.sentence_kl``)."""
    return sentence_kl(cell.kl)


@dataclass(frozen=True)
class Effect:
    """One intervention over every input it ran on: ``target`` as the results name it
    ("Q", "K", "QK" for Q or K scaled, "V"), its ``setting`` (an epsilon; 0 for the mean
    grid) and its KL by the report's one convention (``analyses.grid_kl``: the sentence-averaged KL)."""

    target: str
    setting: float
    kl: Spread

    @property
    def mean(self) -> float:
        return self.kl.mean


def scaling_effects(grid: ScalingGrid) -> list[Effect]:
    """Each (target, epsilon) of the scaling grid, over every input it was scaled on."""
    return [
        Effect(target, eps, grid_kl(cells, grid.sentence_of))
        for (target, eps), cells in grid.groups().items()
    ]


def mean_effects(mean: MeanGrid) -> list[Effect]:
    """Each target of the mean grid, over its inputs, in Q, K, V order."""
    by_target: dict[str, list[GridCell]] = {}
    for cell in mean.cells:
        by_target.setdefault(cell.target, []).append(cell)
    return [
        Effect(t, 0.0, grid_kl(cells, lambda c: int(c.setting)))
        for t, cells in sorted(by_target.items(), key=lambda tc: ORDER.get(tc[0], 3))
    ]


def target_words(target: str) -> str:
    """``Q or K`` for the one intervention that scales either (schema 9), else the target."""
    return "Q or K" if target == "QK" else target


def kl_words(kl: Spread) -> str:
    """A KL by the report's convention with its spread: ``0.07 nats per position`` on one
    sentence, ``0.07 nats per position, the mean over 8 sentences (from 0.02 to 0.11 by
    sentence)`` on several; under ``FLOAT32_NATS`` on every sentence, ``0 within float32
    (under 1e-6 nats)``."""
    if below_float(kl):
        return f"0 within float32 (under {FLOOR_TEXT} nats)"
    text = quantity(kl.mean, "nat") + " per position"
    if kl.n < 2:
        return text
    spread = f"from {number(kl.low, 2)} to {number(kl.high, 2)} by sentence"
    return f"{text}, the mean over {kl.n} sentences ({spread})"


def below_float(kl: Spread) -> bool:
    """Whether every sentence's KL is float32 round-off (under ``FLOAT32_NATS``)."""
    return kl.high < FLOAT32_NATS


def mildest_first(effects: Sequence[Effect], target: str) -> list[Effect]:
    """The scaling interventions of ``target``, the mildest (largest epsilon) first."""
    return sorted((e for e in effects if e.target == target), key=lambda e: -e.setting)


def top_scaling(effects: Sequence[Effect]) -> tuple[tuple[str, ...], float, Spread]:
    """The scaling interventions with the largest KL: (targets, epsilon, KL).

    Targets whose KL ties (relative ``TIE``) at the same epsilon are all named: scaling Q
    or K by the same factor scales every score alike, so their KL is equal (results before
    schema 9 ran both). Ties across epsilons go to the larger (milder) one; between
    targets to Q, K, V in that order.
    """
    top = min(effects, key=lambda e: (-e.mean, ORDER.get(e.target, 3), -e.setting))
    tied = {e.target for e in effects
            if e.setting == top.setting and abs(e.mean - top.mean) <= TIE * max(top.mean, 1e-300)}  # fmt: skip
    return tuple(sorted(tied, key=lambda t: ORDER.get(t, 3))), top.setting, top.kl


def rivals(
    found: Sequence[Effect], targets: Sequence[str], setting: float, highest: bool = True
) -> list[Effect]:
    """The effects that the one named by (``targets``, ``setting``), the largest KL (or
    with ``highest`` false the smallest), does not pass on every sentence they share
    (``grid_kl.above_on_every_sentence``): while any remain, "most" (or "least") holds on
    average only, and a page says so (issue 39: no maximum picked from close values)."""
    named = [e for e in found if e.setting == setting and e.target in targets]
    if not named:
        return []
    best = named[0].kl
    return [
        e
        for e in found
        if not (e.setting == setting and e.target in targets)
        and not (
            above_on_every_sentence(best, e.kl) if highest else above_on_every_sentence(e.kl, best)
        )
    ]


def rivals_words(others: Sequence[Effect], more: str) -> str:
    """``, but not on every sentence: scaling Q or K by 1e-10 (0.12 nats) moves it more on
    some`` for the ``rivals`` of a most (``more``: "more") or least ("less"); "" for none."""
    if not others:
        return ""
    named = join_and(
        [
            f"scaling {target_words(e.target)} by {e.setting:g} ({quantity(e.mean, 'nat')})"
            for e in others
        ]
    )
    verb = "moves" if len(others) == 1 else "move"
    return f", but not on every sentence: {named} {verb} it {more} on some"


def spread_words(kl: Spread) -> str:
    """A KL by the report's convention, short: ``0.07 nats`` on one sentence, ``0.07 nats
    (0.02 to 0.11)`` with its lowest and highest sentence on several; under
    ``FLOAT32_NATS`` on every sentence, ``0 within float32 (under 1e-6 nats)``."""
    if below_float(kl):
        return f"0 within float32 (under {FLOOR_TEXT} nats)"
    text = quantity(kl.mean, "nat")
    return text if kl.n < 2 else f"{text} ({number(kl.low, 2)} to {number(kl.high, 2)})"


def every_target(effects: Sequence[Effect]) -> str:
    """``Q or K 0.2 nats (0.1 to 0.3) and V 0.012 nats (0.01 to 0.02)``: each target's KL
    (``spread_words``), in Q, K, V order; no one picked out as the largest."""
    ordered = sorted(effects, key=lambda e: ORDER.get(e.target, 3))
    return join_and([f"{target_words(e.target)} {spread_words(e.kl)}" for e in ordered])


def measured_as(effects: Sequence[Effect]) -> str:
    """What ``every_target``'s numbers are: the mean KL per position on one sentence, or
    the sentence-averaged one over several, the brackets giving the lowest and highest."""
    n = max((e.kl.n for e in effects), default=0)
    if n < 2:
        return "the mean KL per position"
    return (
        f"the mean KL per position averaged over {n} sentences (in brackets its lowest and "
        "highest sentence)"
    )


def mean_text(mean: MeanGrid) -> str:
    """What replacing Q, K or V by its mean did, every target said (``every_target``)."""
    effects = mean_effects(mean)
    if not effects:
        return ""
    return (
        " Replacing Q, K or V by its mean over the token positions moves it, as "
        f"{measured_as(effects)}, by {every_target(effects)}."
    )
