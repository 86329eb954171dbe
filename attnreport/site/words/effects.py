"""What the interventions did, in words: the cells that moved the next-token distribution most.

Cells are the typed ``results.interventions.GridCell``: target (Q, K, V), setting (an
epsilon in the scaling grid, a sentence in the mean grid), and ``kl``, KL(p_base ||
p_modified) of the next-token distribution at each position, in nats.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from attnreport.analyses.kl import intervention_kl, sentence_kl
from attnreport.results.interventions import GridCell, MeanGrid
from attnreport.site.words.wording import count, join_and, quantity

TIE = 1e-9  # KL values closer than this (relative) are the same effect
# A KL divergence below this is the float32 round-off of the log-probabilities it compares
# (about 1e-7 relative on log-probabilities of order 10), not an effect: it reads as 0.
FLOAT32_NATS = 1e-6
ORDER = {"Q": 0, "K": 1, "V": 2}
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


def mildest_first(cells: Sequence[GridCell], target: str) -> list[GridCell]:
    """The scaling cells of ``target``, the mildest (largest epsilon) first."""
    return sorted((c for c in cells if c.target == target), key=lambda c: -float(c.setting))


def top_scaling(cells: Sequence[GridCell]) -> tuple[tuple[str, ...], float, float]:
    """The scaling cells with the largest mean KL: (targets, epsilon, mean KL in nats).

    Targets whose KL ties (relative ``TIE``) at the same epsilon are all named: scaling Q
    or K by the same factor scales every score alike, so their KL is equal. Ties across
    epsilons go to the larger (milder) one; between targets to Q, K, V in that order.
    """
    kl = [mean_kl(c) for c in cells]
    top = min(range(len(cells)), key=lambda i: (-kl[i], ORDER.get(cells[i].target, 3),
                                                -float(cells[i].setting)))  # fmt: skip
    eps = float(cells[top].setting)
    tied = {c.target for c, v in zip(cells, kl, strict=True)
            if float(c.setting) == eps and abs(v - kl[top]) <= TIE * max(kl[top], 1e-300)}  # fmt: skip
    return tuple(sorted(tied, key=lambda t: ORDER.get(t, 3))), eps, kl[top]


def scaling_text(cells: Sequence[GridCell], layer: int) -> str:
    tied, eps, top_kl = top_scaling(cells)
    what = join_and(tied, "or")
    same = " (the same change: both scale every score)" if set(tied) == {"Q", "K"} else ""
    return (
        f"Of the interventions that scale Q, K or V in layer {layer}, scaling {what} by {eps:g}{same} moves the "
        f"next-token distribution most: a mean KL divergence of {quantity(top_kl, 'nat')} "
        "per position"
    )


def mean_text(mean: MeanGrid) -> str:
    by_target: dict[str, list[list[float]]] = {}
    for c in mean.cells:
        by_target.setdefault(c.target, []).append(list(c.kl))
    if not by_target:
        return ""
    avg = {t: intervention_kl(v) for t, v in by_target.items()}  # the sentence-averaged KL
    top = min(avg, key=lambda t: (-avg[t], ORDER.get(t, 3)))
    n = max(len(v) for v in by_target.values())
    return (
        f" Of the replacements by the mean over the token positions, replacing {top} moves it most "
        f"({quantity(avg[top], 'nat')} on average over {count(n, 'sentence')})."
    )
