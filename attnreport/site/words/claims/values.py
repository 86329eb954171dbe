"""Gu et al.'s claim (ICLR 2025): the sink token carries small values, so a head can put
most of its attention on it and still write little.

The comparison is made within a layer: the first token's value vector against the other
tokens' in the same layer and KV head (``value_norms``), in the sink layers; the same
ratio in the other layers is the control (where nothing sinks onto the first token, its
values need not be short). The sink layers are taken by Gu et al.'s own measure (``gu_sink
_layers``: most heads give the first token more than 0.3 of their attention on average),
the source's scope; results without per-head probabilities fall back on the report's
argmax rule (``readings.sink_layers``), and the page says which rule it used.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping

import numpy as np

from attnreport.analyses import sinks as sink_measures
from attnreport.site.words.claims import Claim, ClaimInputs, claim
from attnreport.site.words.readings import arrays, columns, per_head, sink_layers
from attnreport.site.words.verdicts import (
    Verdict,
    interval_words,
    median_interval,
    untested,
    verdict,
)
from attnreport.site.words.wording import count, index_set
from attnreport.vocabulary import MOST

KEY = "sink-small-values"
HYPOTHESIS = "The sink token's values are small: its value vectors are shorter than the others'."
GU_RULE = (
    "by Gu et al.'s own measure: layers where more than half of the heads give the first "
    "token more than 0.3 of their attention on average, pooled over the set"
)
ARGMAX_RULE = (
    "layers where more than half of the heads make the first token their top key for more "
    "than half of their queries; these results record no attention probabilities, so Gu "
    "et al.'s own measure cannot be taken"
)
TEST = (
    "In each sentence, over the KV heads of the sink layers (RULE): "
    "r = ln(‖v₀‖ / mean over j ≥ 1 of ‖v_j‖), v after its projection. A sentence's effect "
    "is −median r (0: the first token's values are as long as the others'; positive: "
    "shorter, as claimed). The same ratio in the other layers is the control."
)
PerLayer = dict[int, dict[int, list[float]]]  # layer -> sentence -> r over KV heads


def gu_sink_layers(by_sentence: object) -> list[int] | None:
    """The layers where more than half of the heads are sinks by Gu et al.'s measure (the
    pooled mean first-token probability above ``sinks.EPS``: ``sinks.sink_rates``),
    ascending; None when ``by_sentence`` (``focus_by_sentence``) records no ``first_prob``."""
    cols = columns(by_sentence)
    # a typed table of older results fills the unrecorded column with 0.0, which no
    # softmax gives: every head's first token gets some probability
    if not np.any(np.asarray(cols.get("first_prob", []), dtype=float) > 0):
        return None
    scores = sink_measures.pooled_scores({k: np.asarray(v) for k, v in cols.items()})
    rates = sink_measures.sink_rates(scores).by_layer
    return sorted(layer for layer, pct in rates.items() if pct > 100 * MOST)


def value_sink_layers(by_sentence: object, pooled: object) -> tuple[list[int], str]:
    """The sink layers of this claim and its figure, with the rule that picked them in
    words: Gu et al.'s measure where the results allow it, else the argmax rule."""
    found = gu_sink_layers(by_sentence)
    if found is not None:
        return found, GU_RULE
    return sink_layers(per_head(pooled, "first_focus")), ARGMAX_RULE


def log_ratios(norms: Mapping[str, np.ndarray]) -> PerLayer:
    """ln(first_norm / other_norm) per layer and sentence (``value_norms`` columns)."""
    out: PerLayer = {}
    rows = zip(norms["sentence"], norms["layer"], norms["first_norm"], norms["other_norm"],
               strict=True)  # fmt: skip
    for s, layer, first, other in rows:
        if float(first) > 0 and float(other) > 0:
            r = math.log(float(first) / float(other))
            out.setdefault(int(layer), {}).setdefault(int(s), []).append(r)
    return out


def sentence_effects(ratios: PerLayer, layers: Collection[int]) -> dict[int, float]:
    """Per sentence, -median r over the KV heads of ``layers``."""
    pooled: dict[int, list[float]] = {}
    for layer in layers:
        for s, rs in ratios.get(layer, {}).items():
            pooled.setdefault(s, []).extend(rs)
    return {s: -float(np.median(rs)) for s, rs in sorted(pooled.items())}


def breaking_layers(ratios: PerLayer, layers: Collection[int]) -> list[int]:
    """Sink layers the same test, made on that layer alone, contradicts."""
    out = []
    for layer in sorted(layers):
        effects = [-float(np.median(rs)) for rs in ratios.get(layer, {}).values()]
        interval = median_interval(effects) if effects else None
        if interval is not None and interval[1] < 0:
            out.append(layer)
    return out


def against_control(
    ratios: PerLayer, sinks: Collection[int], others: Collection[int], control: Verdict
) -> str:
    """The sink layers against the control, sentence by sentence: the ratio of their two
    value-norm ratios (sink over control), with its interval; whether short values single
    out the sink layers is the mechanism's question, not the claim's (which the control's
    own ratio below 1 would not refute), so it reads as evidence, not as the verdict."""
    sink, other = sentence_effects(ratios, sinks), sentence_effects(ratios, others)
    paired = verdict([sink[s] - other[s] for s in sorted(set(sink) & set(other))])
    if paired.interval is None:
        return ""
    low, high = paired.interval
    where = (
        "shorter in the sink layers than in the other layers"
        if low > 0
        else "longer in the sink layers than in the other layers"
        if high < 0
        else "neither shorter nor longer in the sink layers than in the other layers"
    )
    also = ""
    if control.interval is not None and min(control.interval) > 0:
        also = " They are short in the other layers too: a short first-token value is not "
        also += "confined to the layers where the sink forms."
    return (
        f" Sentence by sentence, the first token's values are {where}: the sink layers' "
        f"ratio over the control's, {_times(paired)}.{also}"
    )


def _times(v: Verdict) -> str:
    return interval_words(v, lambda e: math.exp(-e))


def _scope(inputs: ClaimInputs) -> str:
    sizes = [n for n in inputs.n_tokens if n > 1]
    here = f"{min(sizes)}-{max(sizes)}" if sizes else "no"
    return (
        "Gu et al.'s: the first token's value vectors against the other tokens', in the "
        "heads where the sink forms, on inputs of 64 tokens (here sentences of "
        f"{here} tokens)."
    )


@claim(order=30)
def sink_values_small(inputs: ClaimInputs) -> Claim | None:
    """Gu et al.'s claim in the sink layers, with the other layers as control."""
    norms = arrays(inputs.tables.get("value_norms"))
    pooled = inputs.tables.get("focus_pooled")
    if not norms.get("layer", np.empty(0)).size or not per_head(pooled, "first_focus"):
        return None
    sinks, rule = value_sink_layers(inputs.tables.get("focus_by_sentence"), pooled)
    args = dict(key=KEY, hypothesis=HYPOTHESIS, source="gu", scope=_scope(inputs),
                test=TEST.replace("RULE", rule), figure="value-norms")  # fmt: skip
    if not sinks:
        why = "no layer is a sink layer"
        return Claim(**args, verdict=untested(why), numbers="", evidence="", breakers="")
    ratios = log_ratios(norms)
    found = verdict(list(sentence_effects(ratios, sinks).values()))
    others = sorted(set(ratios) - set(sinks))
    n_layers = max(ratios) + 1
    evidence = (
        f"The ratio ‖v₀‖ / mean ‖v_j‖ is 1 when the first token's values are as long as the "
        f"others'. The {count(len(sinks), 'sink layer')}: {index_set(sinks, 'layer', n_layers)}."
    )
    if others:
        control = verdict(list(sentence_effects(ratios, others).values()))
        evidence += f" In the {count(len(others), 'other layer')}, the control: {_times(control)}."
        evidence += against_control(ratios, sinks, others, control)
    else:
        evidence += " Every layer is a sink layer, so there is no control."
    broken = breaking_layers(ratios, sinks)
    shown = (
        f"{index_set(broken, 'layer')}, where the first token's values are longer than the others'"
        if broken
        else ""
    )
    return Claim(**args, verdict=found, numbers="value-norm ratio, " + _times(found),
                 evidence=evidence, breakers=shown)  # fmt: skip
