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
    sentence's KL, over ``n`` sentences (all 0 over none); ``by_sentence``: (sentence, its
    KL) for each, so that two interventions can be compared sentence by sentence."""

    mean: float
    low: float
    high: float
    n: int
    by_sentence: tuple[tuple[int, float], ...] = ()


def grid_kl(cells: Sequence[GridCell], sentence_of: Callable[[GridCell], int]) -> Spread:
    """The KL of one intervention: ``cells`` its cell on each input, ``sentence_of(cell)``
    that input. Several cells of one input (Q and K scaled apart before schema 9: one
    intervention, on the same positions) count as one sentence, their positions together."""
    per: dict[int, list[float]] = {}
    for cell in cells:
        per.setdefault(sentence_of(cell), []).extend(float(v) for v in cell.kl)
    order = sorted(per)
    sentences = [per[i] for i in order]
    if not sentences:
        return Spread(0.0, 0.0, 0.0, 0)
    means = [sentence_kl(kl) for kl in sentences]
    paired = tuple(zip(order, means, strict=True))
    return Spread(intervention_kl(sentences), min(means), max(means), len(means), paired)


def above_on_every_sentence(a: Spread, b: Spread) -> bool:
    """Whether ``a`` is the larger KL on every sentence both ran on: the paired comparison
    behind saying one intervention moves the distribution more than another (with 8
    sentences, the sign test's 95% interval of the paired differences excludes 0 exactly
    then). Spreads without sentences compare their means."""
    mine, theirs = dict(a.by_sentence), dict(b.by_sentence)
    shared = mine.keys() & theirs.keys()
    if not shared:
        return a.mean > b.mean
    return all(mine[s] > theirs[s] for s in shared)
