"""The rule that turns a claim's evidence into a verdict, stated once and shown on the page.

A claim is tested by ``Evidence``: a signed effect (positive: as the claim says), the
spread of that effect across sentences where it was measured per sentence, how many
sentences stand behind it, and the units (heads, layers, sentences) that break it.
The rule, in order:

1. inconclusive when fewer than ``needed`` sentences stand behind it or nothing was tested
   ("too small to call");
2. inconclusive when the spread across sentences is larger than the effect;
3. contradicted when the effect is not positive, or when at least half the units break it;
4. partly supported when some units break it;
5. supported otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass

SUPPORTED = "supported"
PARTLY = "partly supported"
CONTRADICTED = "contradicted"
INCONCLUSIVE = "inconclusive"
VERDICTS = (SUPPORTED, PARTLY, CONTRADICTED, INCONCLUSIVE)
MIN_SENTENCES = 3  # a claim about sentences in general needs at least this many

RULE = (
    "Each claim is tested on this run's data. It is inconclusive when fewer sentences stand "
    f"behind it than it needs (at least {MIN_SENTENCES} for a claim about sentences in general; "
    "one for a claim that holds by construction) or when its effect varies across sentences "
    "by more than its size; contradicted when the effect points the other way or at least "
    "half of the heads, layers or sentences tested break it; partly supported when some break "
    "it; supported otherwise."
)


@dataclass(frozen=True)
class Evidence:
    """What one claim's test measured.

    effect: signed size (> 0: as claimed), in the claim's own unit; spread: max - min of the
    per-sentence effect (None: not measured per sentence); n_sentences: sentences behind it
    (or what ``unit`` names: a claim about any first token counts different first tokens);
    needed: how many it needs; tested: units tested; breakers: how many of them break it.
    """

    effect: float
    n_sentences: int
    tested: int
    breakers: int = 0
    spread: float | None = None
    needed: int = MIN_SENTENCES
    unit: str = "sentences"  # what n_sentences counts, as the reason names it


@dataclass(frozen=True)
class Verdict:
    """The verdict and the reason, in words (``too small to call: 3 sentences needed, 2 here``)."""

    label: str
    reason: str


def verdict(e: Evidence) -> Verdict:
    """The verdict of ``e`` by the rule in ``RULE``."""
    if e.tested == 0 or e.n_sentences < e.needed:
        return Verdict(
            INCONCLUSIVE,
            f"too small to call: {e.needed} {e.unit} needed, {e.n_sentences} here",
        )
    if e.spread is not None and e.spread > abs(e.effect):
        return Verdict(INCONCLUSIVE, "the spread across sentences is larger than the effect")
    if e.effect <= 0:
        return Verdict(CONTRADICTED, "the effect points the other way")
    if 2 * e.breakers >= e.tested:
        return Verdict(CONTRADICTED, f"{e.breakers} of {e.tested} tested break it")
    if e.breakers:
        return Verdict(PARTLY, f"{e.breakers} of {e.tested} tested break it")
    return Verdict(SUPPORTED, f"none of {e.tested} tested breaks it")
