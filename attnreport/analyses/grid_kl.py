"""An intervention's KL over the inputs it ran on, with its spread over them.

The value is the report's one convention, the sentence-averaged KL (``analyses.kl``): each
sentence's KL averaged over its positions, then the mean over the sentences. ``Spread``
adds the lowest and highest sentence's value. Pure and torch-free: the pages read it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from attnreport.analyses.kl import intervention_kl, sentence_kl
from attnreport.results.interventions import GridCell


@dataclass(frozen=True)
class Spread:
    """An intervention's sentence-averaged KL (``mean``), its ``low``est and ``high``est
    sentence's KL, over ``n`` sentences (all 0 over none)."""

    mean: float
    low: float
    high: float
    n: int


def grid_kl(cells: Sequence[GridCell], sentence_of: Callable[[GridCell], int]) -> Spread:
    """The KL of one intervention: ``cells`` its cell on each input, ``sentence_of(cell)``
    that input. Several cells of one input (Q and K scaled apart before schema 9: one
    intervention, on the same positions) count as one sentence, their positions together."""
    per: dict[int, list[float]] = {}
    for cell in cells:
        per.setdefault(sentence_of(cell), []).extend(float(v) for v in cell.kl)
    sentences = [per[i] for i in sorted(per)]
    if not sentences:
        return Spread(0.0, 0.0, 0.0, 0)
    means = [sentence_kl(kl) for kl in sentences]
    return Spread(intervention_kl(sentences), min(means), max(means), len(means))
