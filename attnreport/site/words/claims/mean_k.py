"""Seed 003's claim: replacing K by its mean over the positions leaves structured attention
maps. The source's K row shows a diagonal band on three inputs: queries look at nearby
keys.

The claim is judged on the mean taken *before* the rotary rotation, rotated again per
position (``MeanGrid.before_rotation``): keys keep their positions, so structure can
survive. The mean taken after the rotation makes every key the same vector and attention
uniform by construction (a check, ``construction``). Structure is measured as the source shows
it, by locality: how much nearer than uniform attention each query looks
(``maps.locality``), not by a gap to uniform (a first-token column is a gap to uniform
too, and not the source's structure).
"""

from __future__ import annotations

import numpy as np

from attnreport.site.words.claims import Claim, ClaimInputs, claim
from attnreport.site.words.claims.maps import cell_localities
from attnreport.site.words.verdicts import interval_words, untested, verdict
from attnreport.site.words.wording import index_set, number

KEY = "mean-k"
HYPOTHESIS = (
    "Replacing K by its mean over the positions leaves structured attention maps (a "
    "diagonal band, as in the source figure)."
)
SCOPE = (
    "The source figure's K row: K of one layer replaced by its mean over the token "
    "positions, on three inputs; structure is its diagonal band (queries looking at nearby "
    "keys). The source's mean keeps each key's position, which here is the mean taken "
    "before the rotary rotation, rotated again per position."
)
TEST = (
    "In each sentence, with K of the intervention layer replaced by its mean taken before "
    "the rotation, each head's locality 1 − D/D_u, D the mean over queries of how far back "
    "they look (Σ_j p_ij (i − j)) and D_u the same under uniform attention. A sentence's "
    "effect is the median locality over the heads (0: no nearer than uniform; positive: a "
    "diagonal band, as claimed)."
)


@claim(order=40)
def mean_k_structured(inputs: ClaimInputs) -> Claim | None:
    """Seed 003's claim on the maps of the mean taken before the rotation."""
    iv = inputs.interventions
    if iv is None or not [c for c in iv.mean.cells if c.target == "K"]:
        return None
    args = dict(key=KEY, hypothesis=HYPOTHESIS, source="seed003", scope=SCOPE, test=TEST,
                figure="mean-grid-before-rotation", sentence=min(iv.mean.sentences, default=0))  # fmt: skip
    cells = [c for c in iv.mean.before_rotation if c.target == "K"]
    if not cells:
        why = (
            "this run has no K mean taken before the rotation (a model without rotary "
            "positions, or results before schema 5)"
        )
        return Claim(**args, verdict=untested(why), numbers="", evidence="", breakers="")
    per_sentence: dict[int, list[float]] = {}
    for c in cells:
        per_sentence[int(c.setting)] = [v for v in cell_localities(c) if v is not None]
    effects = {s: float(np.median(v)) for s, v in per_sentence.items() if v}
    if not effects:
        why = "its inputs were stored as blocks before schema 9, which keeps their locality"
        return Claim(**args, verdict=untested(why), numbers="", evidence="", breakers="")
    found = verdict(list(effects.values()))
    shown = ", ".join(
        f"{number(effects[s], 2, zeros=True)} (sentence {s})" for s in sorted(effects)
    )
    evidence = (
        f"Median locality over the heads of layer {iv.layer}, per sentence: {shown}; 0 is "
        "uniform attention, 1 every query on itself."
    )
    broken = [s for s, e in sorted(effects.items()) if e <= 0]
    breakers = (
        f"{index_set(broken, 'sentence')}, whose maps look no nearer than uniform" if broken else ""
    )
    numbers = "locality, " + interval_words(found)
    return Claim(**args, verdict=found, numbers=numbers, evidence=evidence, breakers=breakers)
