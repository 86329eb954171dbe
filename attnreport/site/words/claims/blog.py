"""The source blog's claim in its own scope: "For layers 4 and later, when attention
focuses on the first token, that head has no impact on the hidden state" (its Figure 10).

The blog states it token by token, so the test compares, inside one head, the update the
head writes at the tokens whose top key is the first token with the update it writes at
its other tokens (``focus_by_sentence``'s ``first_update`` and ``other_update``, medians
over those tokens: ``analyses.split_updates``), in layers 4 and later only. Pooling heads
or layers instead lets a few very large early-layer updates carry a mean (Gemma-3's
layers 0-1, 1-3 times ‖x‖ after its post-attention norm).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from attnreport.site.words import fit
from attnreport.site.words.claims import Claim, ClaimInputs, claim
from attnreport.site.words.readings import arrays
from attnreport.site.words.verdicts import interval_words, median_interval, untested, verdict
from attnreport.site.words.wording import count, index_set, number, percent

FIRST_LAYER = 4  # the source's scope: "for layers 4 and later"
KEY = "sink-small-update"
HYPOTHESIS = "Heads that focus on the first token change the hidden state little."
SCOPE = (
    f"The source's own scope (its Figure 10): layers {FIRST_LAYER} and later, token by "
    "token, in one sentence: the update a head writes (‖u‖/‖x‖) where its top key is the "
    "first token, against the same head's update at its other tokens."
)
TEST = (
    f"In each sentence and each head of layers {FIRST_LAYER} and later that has tokens of "
    "both kinds: r = ln(median update where the top key is the first token / median update "
    "at the head's other tokens). A sentence's effect is −median of r over those heads: 0 "
    "when both kinds of token get updates of the same size, positive when the head writes "
    "less where it looks at the first token, as claimed."
)
Ratios = dict[int, dict[tuple[int, int], float]]  # sentence -> head -> r


def head_ratios(by_sentence: Mapping[str, np.ndarray], first_layer: int = FIRST_LAYER) -> Ratios:
    """Per sentence, per head of layers ``first_layer`` and later with tokens of both kinds,
    r = ln(first_update / other_update). by_sentence: ``focus_by_sentence`` columns."""
    c = by_sentence
    n_first = np.where(c["n_first"] < 0, c["n_queries"], c["n_first"])
    firsts = np.rint(c["first_focus"] * n_first).astype(np.int64)  # queries topped by 0
    others = c["n_queries"] - firsts
    keep = (
        (c["layer"] >= first_layer)
        & (firsts > 0)
        & (others > 0)
        & (c["first_update"] > 0)
        & (c["other_update"] > 0)
    )
    out: Ratios = {}
    for s, lay, h, a, b in zip(*(c[k][keep] for k in ("sentence", "layer", "head",
                               "first_update", "other_update")), strict=True):  # fmt: skip
        out.setdefault(int(s), {})[(int(lay), int(h))] = math.log(float(a) / float(b))
    return out


def breakers(ratios: Ratios) -> list[tuple[int, int]]:
    """Heads the same test, made on that head alone, contradicts: over the sentences where
    the head has tokens of both kinds, the 95% interval of its median r lies above 0."""
    by_head: dict[tuple[int, int], list[float]] = {}
    for heads in ratios.values():
        for head, r in heads.items():
            by_head.setdefault(head, []).append(r)
    return sorted(
        head
        for head, rs in by_head.items()
        if (interval := median_interval(rs)) is not None and interval[0] > 0
    )


def _sizes(by_sentence: Mapping[str, np.ndarray], ratios: Ratios) -> tuple[float, float]:
    """The two update sizes over the heads in scope: the median over sentences of each
    sentence's median over its heads, where the top key is the first token and elsewhere."""
    c = by_sentence
    rows = {(int(s), int(a), int(b)): i for i, (s, a, b) in
            enumerate(zip(c["sentence"], c["layer"], c["head"], strict=True))}  # fmt: skip
    pairs = [
        [float(np.median([c[col][rows[(s, *h)]] for h in heads])) for s, heads in ratios.items()]
        for col in ("first_update", "other_update")
    ]
    return float(np.median(pairs[0])), float(np.median(pairs[1]))


@claim(order=10)
def sink_heads_change_little(inputs: ClaimInputs) -> Claim | None:
    """The blog's claim, tested per token in layers 4 and later (module docstring)."""
    c = arrays(inputs.tables.get("focus_by_sentence"))
    if not c:
        return None
    args = dict(key=KEY, hypothesis=HYPOTHESIS, source="blog", scope=SCOPE, test=TEST,
                figure="split-updates")  # fmt: skip
    if "first_update" not in c or bool((c["first_update"] < 0).all()):
        why = (
            "these results predate the update sizes split by top key (results schema 9); "
            "analyse again to test it"
        )
        return Claim(**args, verdict=untested(why), numbers="", evidence="", breakers="")
    if int(c["layer"].max()) < FIRST_LAYER:
        why = f"the model has no layer {FIRST_LAYER}"
        return Claim(**args, verdict=untested(why), numbers="", evidence="", breakers="")
    ratios = head_ratios(c)
    found = verdict([-float(np.median(list(h.values()))) for h in ratios.values()])
    numbers = "update ratio, " + interval_words(found, lambda e: math.exp(-e))
    if not ratios:
        return Claim(**args, verdict=found, numbers="", evidence="", breakers="")
    first, other = _sizes(c, ratios)
    n_layers = int(c["layer"].max()) + 1
    heads = [len(h) for h in ratios.values()]
    evidence = (
        f"In {index_set(range(FIRST_LAYER, n_layers), 'layer')}, {count(len(ratios), 'sentence')} "
        f"have heads with tokens of both kinds (a median of {int(np.median(heads))} heads per "
        f"sentence). In the median head a token whose top key is the first token gets an "
        f"update {number(math.exp(-found.median), 2)} times the size of the same head's other "  # type: ignore[operator]
        f"tokens: {percent(first)} of ‖x‖ against {percent(other)} (medians over heads, then "
        "over sentences)."
    )
    broken = breakers(ratios)
    shown = ""
    if broken:
        shown = (
            f"{fit.structure_words(broken, inputs.n_heads, inputs.n_kv_heads)}, where tokens "
            "whose top key is the first token get larger updates than the head's others "
            "(the same test on that head alone)"
        )
    return Claim(**args, verdict=found, numbers=numbers, evidence=evidence, breakers=shown)
