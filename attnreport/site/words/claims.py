"""Claims tested: the source blog's and the literature's claims as hypotheses on this run.

Each test reads the results (set tables as column dicts, the typed interventions),
measures one ``verdicts.Evidence`` and says the number behind it and what breaks it.
The verdict comes from ``verdicts.verdict``, one rule for every claim.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from attnreport.site.words import fit
from attnreport.site.words.readings import columns
from attnreport.site.words.verdicts import Evidence, Verdict, verdict
from attnreport.site.words.wording import count, index_set, join_and, percent

SINK = 0.5  # a sink head: the first token is its top key for at least half of the queries
UNIFORM_TOL = 0.01  # largest |p - uniform| that still reads as uniform attention
UNCHANGED_TOL = 1e-4  # largest |p - p_base| that reads as unchanged (results keep 6 decimals)


@dataclass(frozen=True)
class Claim:
    """One claim as tested. ``source`` is a key of ``SOURCES``; ``figure`` the key of the
    figure that shows the evidence, on the index (``sentence`` None) or a sentence page."""

    key: str
    hypothesis: str
    source: str
    verdict: Verdict
    evidence: str
    breakers: str
    figure: str
    sentence: int | None = None


SOURCES = {
    "blog": "the source blog post",
    "streamingllm": "Xiao et al., StreamingLLM (ICLR 2024)",
    "gu": "Gu et al. (ICLR 2025)",
    "seeds": "the source figures (seeds 000-002)",
    "seed003": "the source's mean-replacement figure (seed 003)",
}


def _significant(value: float, digits: int) -> str:
    """``value`` with ``digits`` significant digits, never in exponent form (288.9 -> 289)."""
    places = digits - 1 - math.floor(math.log10(abs(value))) if value else 0
    return f"{value:.{max(places, 0)}f}"


def _telling_apart(larger: float, smaller: float) -> Callable[[float], str]:
    """How to write shares so that ``larger`` and ``smaller`` read as different: ``percent``,
    or percentages with the fewest significant digits that part them (0.245% and 0.238%
    where ``percent`` gives 0.2% for both)."""
    if percent(larger) != percent(smaller):
        return percent
    digits = 2
    while _significant(100 * larger, digits) == _significant(100 * smaller, digits) and digits < 6:
        digits += 1
    return lambda share: f"{_significant(100 * share, digits)}%"


def sink_heads_change_little(first_focus: Mapping, magnitude: Mapping, n_sentences: int) -> Claim:
    """The blog's premise: heads that focus on the first token change the hidden state little.

    first_focus, magnitude: ``{(layer, head): pooled value}`` over ``n_sentences``. Effect: 1 - (mean update of
    sink heads / mean update of the others). A sink head breaks it when its update is
    larger than the median update of the other heads. The evidence gives both medians beside
    the means: a few large heads can carry a mean (Gemma-3's layers 0-1).
    """
    sinks = sorted(k for k, v in first_focus.items() if v >= SINK and k in magnitude)
    others = [magnitude[k] for k in first_focus if first_focus[k] < SINK and k in magnitude]
    hyp = "Heads that focus on the first token change the hidden state little."
    if not sinks or not others:
        ev = Evidence(0.0, 0, 0)
        return Claim("sink-small-update", hyp, "blog", verdict(ev),
                     "No split: every head is a sink head, or none is.", "", "set-head-impact")  # fmt: skip
    sink_sizes = [magnitude[k] for k in sinks]
    mean_sink, median_sink = float(np.mean(sink_sizes)), float(np.median(sink_sizes))
    mean_other, median_other = float(np.mean(others)), float(np.median(others))
    breakers = [k for k in sinks if magnitude[k] > median_other]
    effect = 1 - mean_sink / mean_other if mean_other > 0 else 0.0
    ev = Evidence(effect, n_sentences, tested=len(sinks), breakers=len(breakers))
    low, high = (f(magnitude[k] for k in breakers) for f in (min, max)) if breakers else (0, 0)
    # the other heads' median is told apart from the smallest breaker; every size of the
    # evidence is given to the same precision, so one number never reads two ways
    shown = _telling_apart(low, median_other) if breakers else percent
    text = (
        f"The {count(len(sinks), 'sink head')} (the first token is their top key for most "
        f"queries) write updates of {shown(mean_sink)} of ‖x‖ on average (median "
        f"{shown(median_sink)}), the other {count(len(others), 'head')} {shown(mean_other)} "
        f"(median {shown(median_other)})."
    )
    broken = ""
    if breakers:
        lo, hi, median = shown(low), shown(high), shown(median_other)
        sizes = lo if lo == hi else f"{lo} to {hi}"
        broken = (
            f"{fit.heads_words(breakers)}: sink heads whose updates ({sizes} of ‖x‖) are larger "
            f"than the median of the other heads ({median})"
        )
    return Claim("sink-small-update", hyp, "blog", verdict(ev), text, broken, "set-head-impact")


def _sink_shares(cols: Mapping[str, Sequence[Any]]) -> dict[int, float]:
    """Per sentence (with queries), the share of heads whose top key is token 0 for most
    queries (first_focus > ``SINK``)."""
    share: dict[int, list[bool]] = {}
    for s, v, n in zip(cols["sentence"], cols["first_focus"], cols["n_queries"], strict=True):
        if int(n) > 0:
            share.setdefault(int(s), []).append(float(v) > SINK)
    return {s: float(np.mean(v)) for s, v in share.items()}


def _first_token_words(n_sentences: int, n_first: int, bos_added: bool, contrast: bool) -> str:
    """How the sentences start, before the sink share: when they all start with one token
    and no capture with a BOS first adds another, that nothing varies (so the claim is not
    tested by them)."""
    if n_first > 1 or n_sentences < 2 or contrast:
        bos = "a BOS token" if bos_added else "no BOS token (the first token is the sentence's own)"
        return f"With {bos}, {count(n_sentences, 'sentence')} starting with {count(n_first, 'different token')}: "  # fmt: skip
    first = "the BOS token the tokenizer puts first" if bos_added else "the same token"
    return (
        f"All {n_sentences} sentences start with {first}, so the first token never varies "
        "here and these sentences cannot tell whether the sink follows any first token; on "
        "that one token, "
    )


def sink_on_any_first_token(
    by_sentence: Any, first_ids: Sequence[int], bos_added: bool, bos_contrast: Any = None
) -> Claim:
    """StreamingLLM: a sink forms on the first token whatever that token is.

    by_sentence: ``focus_by_sentence`` columns; first_ids[s]: sentence s's first token id;
    bos_contrast: the same sentences with a BOS first (``bos_contrast`` columns) or None.
    Per sentence and condition: the share of heads that make token 0 the top key for most
    queries. Effect: the smaller mean share - 1/2; sentences needed: 3 different first
    tokens (the BOS counts as one); a (sentence, condition) where most heads are not sinks
    breaks it.
    """
    conditions = {"": _sink_shares(columns(by_sentence))}
    if bos_contrast is not None and len(columns(bos_contrast).get("sentence", [])):
        conditions[" with a BOS first"] = _sink_shares(columns(bos_contrast))
    shares = conditions[""]
    distinct = len({int(first_ids[s]) for s in shares if s < len(first_ids)})
    distinct += len(conditions) - 1
    means = {k: float(np.mean(list(v.values()) or [0.0])) for k, v in conditions.items()}
    spreads = [max(v.values()) - min(v.values()) for v in conditions.values() if v]
    breakers = [(k, s) for k, v in conditions.items() for s, x in v.items() if x <= SINK]
    tested = sum(len(v) for v in conditions.values())
    ev = Evidence(min(means.values()) - SINK, distinct, tested, len(breakers),
                  spread=max(spreads, default=0.0), unit="different first tokens")  # fmt: skip
    n_first = distinct - len(conditions) + 1
    text = _first_token_words(len(shares), n_first, bos_added, len(conditions) > 1)
    text += (
        f"the share of heads that are sinks is {percent(means[''])} "
        f"({fit.spread_words(list(shares.values()))})."
    )
    if len(conditions) > 1:
        with_bos = conditions[" with a BOS first"]
        text += (
            f" Captured again with the tokenizer's BOS first, the sink moves to the BOS: "
            f"{percent(means[' with a BOS first'])} of heads make it their top key for most "
            f"queries ({fit.spread_words(list(with_bos.values()))})."
        )
    elif not bos_added:
        text += " The same sentences were not captured with a BOS first."
    broken = join_and([f"sentence {s}{k}" for k, s in sorted(breakers)]) if breakers else ""
    return Claim("sink-any-first-token",
                 "A sink forms on the first token, whatever that token is.",
                 "streamingllm", verdict(ev), text, broken, "set-sink-rate")  # fmt: skip


def sink_values_small(value_norms: Any, first_focus: Mapping) -> Claim | None:
    """Gu et al.: the sink token's values are small. In each sink layer (most heads make
    token 0 the top key for most queries), the ratio ‖v_0‖ / mean_j≥1 ‖v_j‖ over kv heads.

    value_norms: ``value_norms`` columns (sentence, layer, kv_head, first_norm,
    other_norm); first_focus: ``{(layer, head): pooled value}``. Effect: 1 - the mean ratio
    over sink layers; spread: the range over sentences of that mean; a sink layer whose
    ratio is 1 or more breaks it. None without value norms."""
    cols = columns(value_norms)
    if not cols.get("layer"):
        return None
    by_layer: dict[int, list[bool]] = {}
    for (layer, _), v in first_focus.items():
        by_layer.setdefault(layer, []).append(v > SINK)
    sinks = sorted(k for k, v in by_layer.items() if sum(v) > SINK * len(v))
    ratios: dict[int, dict[int, list[float]]] = {}  # layer -> sentence -> ratios
    rows = zip(cols["sentence"], cols["layer"], cols["first_norm"], cols["other_norm"], strict=True)
    for s, layer, first, other in rows:
        if int(layer) in sinks and float(other) > 0:
            ratios.setdefault(int(layer), {}).setdefault(int(s), []).append(
                float(first) / float(other)
            )
    hyp = "The sink token's values are small: its value vectors are shorter than the others'."
    if not ratios:
        ev = Evidence(0.0, 0, 0)
        return Claim("sink-small-values", hyp, "gu", verdict(ev), "No sink layer to test.", "",
                     "set-sink-rate")  # fmt: skip
    layer_ratio = {
        k: float(np.mean([x for v in by_s.values() for x in v])) for k, by_s in ratios.items()
    }
    sentences = sorted({s for by_s in ratios.values() for s in by_s})
    per_sentence = [float(np.mean([x for by_s in ratios.values() for x in by_s.get(s, [])]))
                    for s in sentences]  # fmt: skip
    mean = float(np.mean(list(layer_ratio.values())))
    breakers = sorted(k for k, v in layer_ratio.items() if v >= 1)
    ev = Evidence(1 - mean, len(sentences), len(layer_ratio), len(breakers),
                  spread=max(per_sentence) - min(per_sentence))  # fmt: skip
    text = (
        f"In the {count(len(layer_ratio), 'sink layer')}, the first token's value vectors are "
        f"on average {mean:.2f} times the length of the others' ({fit.spread_words(per_sentence, lambda r: f'{r:.2f}')}; 1 = the same length)."
    )
    low = min(layer_ratio, key=lambda k: (layer_ratio[k], k))
    text += f" Smallest in layer {low}: {layer_ratio[low]:.2f}."
    broken = ""
    if breakers:
        broken = f"{index_set(breakers, 'layer')}, where the first token's values are not shorter"
    return Claim("sink-small-values", hyp, "gu", verdict(ev), text, broken, "set-sink-rate")
