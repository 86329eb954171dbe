"""StreamingLLM's claim: a sink forms on the first token whatever that token is (Xiao et
al., ICLR 2024: the initial tokens take a large share of attention "regardless of their
semantic importance", beyond the bottom two layers).

Position and token identity are separated by capturing every sentence twice
(``attnreport.bos_contrast``): once as the run did and once in the other BOS condition,
so position 0 holds the tokenizer's BOS in one capture and the sentence's own first
token in the other. What is counted is the attention the first token receives (Gu et
al.'s head score, the mean of p_i0), against what uniform attention would give it.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from attnreport.site.words.claims import Claim, ClaimInputs, claim
from attnreport.site.words.readings import arrays
from attnreport.site.words.verdicts import interval_words, untested, verdict
from attnreport.site.words.wording import count, index_set, number

FIRST_LAYER = 2  # StreamingLLM: the sink shows beyond the bottom two layers
KEY = "sink-any-first-token"
HYPOTHESIS = "A sink forms on the first token, whatever that token is."
BOS, OWN = "with the BOS token first", "with the sentence's own first token first"
TEST = (
    "Each sentence is captured twice, with the tokenizer's BOS token first and without it "
    "(its own first token first): the token at position 0 changes, its position does not. "
    f"In each capture, over the heads of layers {FIRST_LAYER} and later, the median of "
    "p̄₀ − u, where p̄₀ is the mean probability the first token gets over queries 1..n−1 "
    "and u = mean 1/(i+1) what uniform attention would give it. A sentence's effect is the "
    "smaller of its two captures' (0: in one of them the first token gets no more than "
    "uniform attention; positive: it is a sink whichever token it is, as claimed)."
)
Excess = dict[int, float]  # sentence -> median over heads of p0 - uniform


def uniform_share(n_first: np.ndarray) -> np.ndarray:
    """What uniform attention gives token 0, averaged over queries 1..m (m = ``n_first``,
    the queries that can see it): mean of 1/(i+1) = (H_{m+1} - 1) / m; 0 for m = 0."""
    m = np.asarray(n_first, dtype=np.int64)
    top = int(m.max(initial=0))
    harmonic = np.concatenate([[0.0], np.cumsum(1.0 / np.arange(2, top + 2))])  # [m]: sum 1/(i+1)
    return np.where(m > 0, harmonic[m] / np.maximum(m, 1), 0.0)


def excess(table: Mapping[str, np.ndarray], first_layer: int = FIRST_LAYER) -> Excess:
    """Per sentence, the median over the heads of layers ``first_layer`` and later of the
    first token's mean probability minus uniform attention's (``uniform_share``). table:
    ``focus_by_sentence`` or ``bos_contrast`` columns (first_prob, n_first, n_queries)."""
    n_first = np.where(table["n_first"] < 0, table["n_queries"], table["n_first"])
    keep = (table["layer"] >= first_layer) & (n_first > 0)
    gap = table["first_prob"] - uniform_share(n_first)
    out: dict[int, list[float]] = {}
    for s, g in zip(table["sentence"][keep], gap[keep], strict=True):
        out.setdefault(int(s), []).append(float(g))
    return {s: float(np.median(g)) for s, g in out.items()}


def _contrast(inputs: ClaimInputs) -> tuple[str, Excess] | None:
    """The other capture's label and excess, or None when the results lack it (no BOS in
    the tokenizer, or a contrast written before its probabilities, schema 9). The run's
    own capture is the other condition (``BOS`` against ``OWN``)."""
    c = arrays(inputs.tables.get("bos_contrast"))
    if not c or not len(c.get("sentence", [])) or "first_prob" not in c:
        return None
    if bool((c["first_prob"] < 0).all()):
        return None
    with_bos = bool(c["bos"][0]) if "bos" in c else True
    return (BOS if with_bos else OWN), excess(c)


def _scope(inputs: ClaimInputs) -> str:
    sizes = [n for n in inputs.n_tokens if n > 1]
    lengths = f"{min(sizes)}-{max(sizes)} tokens" if sizes else "no sentence of two tokens"
    return (
        f"StreamingLLM's scope (its Figure 2): layers {FIRST_LAYER} and later, every head; "
        "the attention the first token receives, whatever token it is; their inputs are "
        f"long texts, here sentences of {lengths}."
    )


def _untested(inputs: ClaimInputs) -> str:
    """Why a run without the second capture cannot test the claim: position and token
    identity are not separated."""
    c = arrays(inputs.tables.get("bos_contrast"))
    if c and len(c.get("sentence", [])):
        return (
            "the second capture of these results predates its first-token probabilities "
            "(results schema 9), so position and token identity are not separated"
        )
    first = "the BOS token" if inputs.bos_added else "its own first token"
    return (
        f"every sentence was captured only with {first} first (the tokenizer has no BOS, or "
        "the results predate schema 9), so position and token identity are not separated"
    )


def _told(label: str, per_sentence: Excess, sentences: list[int], distinct: int) -> str:
    median = float(np.median([per_sentence[s] for s in sentences]))
    which = f" ({count(distinct, 'different token')} over the sentences)" if label == OWN else ""
    return f"{label}{which}, {number(median, 2)}"


@claim(order=20)
def sink_on_any_first_token(inputs: ClaimInputs) -> Claim | None:
    """StreamingLLM's claim, tested on both captures of every sentence (module docstring)."""
    own = arrays(inputs.tables.get("focus_by_sentence"))
    if not own or "first_prob" not in own:
        return None
    args = dict(key=KEY, hypothesis=HYPOTHESIS, source="streamingllm", scope=_scope(inputs),
                test=TEST, figure="first-token-bos")  # fmt: skip
    other = _contrast(inputs)
    if other is None:
        return Claim(**args, verdict=untested(_untested(inputs)), numbers="", evidence="",
                     breakers="")  # fmt: skip
    captures = {(OWN if other[0] == BOS else BOS): excess(own), other[0]: other[1]}
    sentences = sorted(set.intersection(*(set(e) for e in captures.values())))
    effects = {s: min(e[s] for e in captures.values()) for s in sentences}
    found = verdict(list(effects.values()))
    numbers = "first-token probability above uniform, " + interval_words(found)
    if not sentences:
        return Claim(**args, verdict=found, numbers="", evidence="", breakers="")
    ids = inputs.first_ids
    distinct = len({ids[s] for s in sentences if s < len(ids)})
    told = [_told(k, captures[k], sentences, distinct) for k in (OWN, BOS) if k in captures]
    evidence = (
        f"Over {count(len(sentences), 'sentence')}, the median head of layers {FIRST_LAYER} "
        "and later gives the first token this much more probability than uniform attention "
        f"would: {'; '.join(told)} (medians over heads, then over sentences)."
    )
    broken = [s for s in sentences if effects[s] <= 0]
    named = (
        f"all {count(len(broken), 'sentence')}"
        if len(broken) == len(sentences) > 1
        else index_set(broken, "sentence")
    )
    shown = (
        f"{named}, where the first token gets no more than uniform attention in one of the captures"
        if broken
        else ""
    )
    return Claim(**args, verdict=found, numbers=numbers, evidence=evidence, breakers=shown)
