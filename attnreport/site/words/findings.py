"""Key findings: the handful of sentences that open the report, computed from results.

Each finding is a ``Finding``: its text (written with ``wording``) and the key of the
figure that shows it, so a page can link to that figure. Inputs are the typed results
tables by name (``results.types.set_tables``: ``focus_by_sentence``, ``focus_pooled``,
``impact_pooled``, ...) and the typed interventions; plain column tables
(``{name: list}``, bare or in ``{"columns": {...}}``) are read the same way. Ties go to the lower layer, then
the lower head; among intervention cells to Q, K, V in that order, then the larger
(milder) epsilon.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from attnreport.analyses import sinks
from attnreport.results.interventions import Interventions
from attnreport.site.words import fit
from attnreport.site.words.effects import (
    FLOOR_TEXT,
    NO_POST_NORM,
    POST_NORM,
    Effect,
    PostNorm,
    below_float,
    kl_words,
    mean_text,
    mildest_first,
    scaling_effects,
    scaling_text,
    top_scaling,
)
from attnreport.site.words.readings import Finding, Heads, columns, layer_means, per_head, top_key
from attnreport.site.words.role_findings import role_findings
from attnreport.site.words.wording import (
    MAX_ITEMS,
    capitalise,
    count,
    head_name,
    head_set,
    index_set,
    join_and,
    number,
    percent,
    plural,
    times,
)
from attnreport.vocabulary import MOST

EVERY_SENTENCE = 0.9  # share of queries a head must send to token 0 in each sentence
LIST_LAYERS = MAX_ITEMS // 2  # heads are listed one by one for at most this many layers


def _heads_where(heads: Sequence[tuple[int, int]], n_layers: int) -> str:
    """``heads 0-2 of layer 3 and head 5 of layer 7``, or for heads in more than
    ``LIST_LAYERS`` layers only where they are: ``in layers 2-9 and 12-29``.
    """
    layers = {layer for layer, _ in heads}
    if len(layers) <= LIST_LAYERS:
        return head_set(heads)
    return "in " + index_set(layers, "layer", n_layers)


def layer_by_sentence(by_sentence: Any, layer: int, statistic: str = "first_focus") -> list[float]:
    """Per sentence (those with queries), the mean of ``statistic`` over ``layer``'s heads."""
    cols = columns(by_sentence)
    acc: dict[int, list[float]] = {}
    for s, lay, v, n in zip(cols.get("sentence", []), cols.get("layer", []),
                            cols.get(statistic, []), cols.get("n_queries", []), strict=True):  # fmt: skip
        if int(lay) == layer and int(n) > 0:
            acc.setdefault(int(s), []).append(float(v))
    return [sum(v) / len(v) for _, v in sorted(acc.items())]


def sink_onset(first_focus: Heads, by_sentence: Any = None) -> Finding:
    """Where the first-token sink starts and how strong it is.

    A layer is a sink layer when most of its heads make token 0 the top key for most
    queries (both "most" = more than half). Strength: the layer with the highest mean
    first-token focus over its heads, with its spread across sentences when
    ``by_sentence`` (focus_by_sentence columns) is given.
    """
    means = layer_means(first_focus)
    n_layers = len(means)
    sink_layers = [
        layer
        for layer in means
        if sum(v > MOST for (lay, _), v in first_focus.items() if lay == layer)
        > MOST * sum(1 for lay, _ in first_focus if lay == layer)
    ]
    peak = top_key(means)
    if not sink_layers:
        head = top_key(first_focus)
        text = (
            "No layer has a first-token sink: in no layer do most heads make the first token "
            "the top key for most queries. The head that comes closest, "
            f"{head_name(*head)}, does so for {percent(first_focus[head])} of queries."
        )
        return Finding("sink-onset", text, "set-first-focus")
    start = sink_layers[0]
    where = index_set(sink_layers, "layer", n_layers)
    opening = (
        "The first token is an attention sink from the first layer on"
        if start == min(means)
        else f"An attention sink on the first token appears in layer {start}"
    )
    text = (
        f"{opening}: in {where}, most heads make it the top key for most queries. It is "
        f"strongest in layer {peak}, whose heads send {percent(means[peak])} of queries "
        "to it on average"
    )
    spread = layer_by_sentence(by_sentence, peak) if by_sentence else []
    text += f" ({fit.spread_words(spread)})." if len(spread) > 1 else "."
    return Finding("sink-onset", text, "set-first-focus")


def persistent_sinks(by_sentence: Any, threshold: float = EVERY_SENTENCE) -> Finding:
    """Heads that are sinks in every sentence: first-token focus >= ``threshold`` in each.

    by_sentence: columns sentence, layer, head, first_focus, n_queries (focus_by_sentence).
    One-token sentences (n_queries 0) are left out: they say nothing about focus.
    """
    cols = columns(by_sentence)
    rows = zip(cols["sentence"], cols["layer"], cols["head"], cols["first_focus"],
               cols["n_queries"], strict=True)  # fmt: skip
    worst: Heads = {}
    sentences: set[int] = set()
    for s, layer, head, value, n in rows:
        if int(n) > 0:
            sentences.add(int(s))
            key = (int(layer), int(head))
            worst[key] = min(worst.get(key, 1.0), float(value))
    held = [k for k, v in worst.items() if v >= threshold]
    n_s = len(sentences)
    each = "the one sentence" if n_s == 1 else f"every one of the {n_s} sentences"
    rule = f"the first token is the top key for at least {percent(threshold)} of queries"
    if not held:
        return Finding(
            "sinks-every-sentence",
            f"No head is a first-token sink in {each}, if a sink means that {rule}.",
            "set-first-focus",
        )
    where = _heads_where(held, len({k[0] for k in worst}))
    where = f": {where}" if not where.startswith("in ") else f", {where}"
    text = (
        f"{capitalise(count(len(held), 'head'))} {plural('is', len(held))} "
        f"{'a sink' if len(held) == 1 else 'sinks'} in {each} ({rule} in each){where}."
    )
    return Finding("sinks-every-sentence", text, "set-first-focus")


def self_focus_heads(self_focus: Heads) -> Finding:
    """Heads whose top key is the query token itself for most queries (pooled)."""
    held = [k for k, v in self_focus.items() if v > MOST]
    best = top_key(self_focus) if self_focus else None
    if best is None or self_focus[best] == 0:
        return Finding(
            "self-focus", "No head ever makes a token its own top key.", "set-self-focus"
        )
    if not held:
        text = (
            "No head attends mostly to the current token; the one that does so most, "
            f"{head_name(*best)}, makes it the top key for {percent(self_focus[best])} of queries."
        )
    elif len(held) == 1:
        text = (
            f"One head attends mostly to the current token: {head_name(*best)} makes the query "
            f"token its own top key for {percent(self_focus[best])} of queries."
        )
    else:
        text = (
            f"{capitalise(count(len(held), 'head'))} attend mostly to the current token "
            f"({_heads_where(held, len({k[0] for k in self_focus}))}); the strongest, {head_name(*best)}, makes it the top key for "
            f"{percent(self_focus[best])} of queries."
        )
    return Finding("self-focus", text, "set-self-focus")


def impact_peak(impact: Any, before_norm: bool = False) -> Finding | None:
    """The layer whose heads change the hidden state most (mean ``magnitude`` over heads).

    impact: columns layer, head, magnitude (impact_pooled: ||u|| / ||x||, averaged over tokens).
    before_norm: the model normalises the block's output before adding it (Gemma, OLMo 2)
    and these sizes were measured before that norm (results before schema 8): the text
    says what they can compare.
    """
    heads = per_head(impact, "magnitude")
    if not heads:
        return None
    means = layer_means(heads)
    top = top_key(means)
    low = min(means, key=lambda k: (means[k], k))
    size = times(means[top], "the hidden state")
    if len(means) > 1 and means[low] == means[top]:
        text = f"Heads change the hidden state equally in every layer: each update is {size}."
        return Finding("impact-peak", text, "set-head-impact")
    text = f"Heads change the hidden state most in layer {top}: a head's update there is on average {size}"
    if low != top:
        low_size = percent(means[low]) if means[low] < 1 else f"{number(means[low])} times"
        text += f", against {low_size} in layer {low}"
    text += "."
    if before_norm:
        text += (
            " These sizes are taken before the model's post-attention norm, which rescales "
            "the block's summed output before it is added: they compare heads with each "
            "other, not with what the block adds to the hidden state."
        )
    return Finding("impact-peak", text, "set-head-impact")


def intervention_effect(
    interventions: Interventions | None, post_norm: bool = False
) -> Finding | None:
    """Which of Q, K, V and which epsilon moved the next-token distribution most (KL).

    interventions: the typed grids (the scaling cells' target, epsilon and KL; the mean
    cells' target and KL). None without scaling cells. post_norm: the model normalises the
    block's output before adding it, which can undo a scaling of V (``v_undone``).
    """
    if interventions is None:
        return None
    layer = interventions.layer
    scaling = interventions.scaling
    effects = scaling_effects(scaling)
    if not effects:
        return None
    if all(below_float(e.kl) for e in effects):
        text = (
            f"Scaling Q, K or V in layer {layer} left the next-token distribution unchanged "
            f"within float32 (a KL under {FLOOR_TEXT} nats at every scale factor)."
        )
    else:
        text = scaling_text(effects, layer)
        v = [e for e in effects if e.target == "V"]
        if v and "V" not in top_scaling(effects)[0]:  # V's own effect, when V is not the top one
            strongest = max(v, key=lambda e: e.mean)
            text += f"; scaling V moves it at most {kl_words(strongest.kl)}"
        text += "." + (v_undone(effects) if post_norm else "")
    text += mean_text(interventions.mean)
    return Finding("interventions", text, "scaling-grid", scaling.sentence)


UNDONE = 0.01  # V's mildest scaling moves the output less than 1% of its strongest one


def v_undone(effects: Sequence[Effect], said: bool = False) -> str:
    """For a model with a post-attention norm: V's mildest scaling barely moving the
    next-token distribution (under ``UNDONE`` of what its strongest does), in words; "" when
    the grid does not show it. effects: the scaling grid's interventions
    (``effects.scaling_effects``); said: the text before already gives the mildest
    scaling's KL, so only the reason follows.
    """
    v = mildest_first(effects, "V")
    if len(v) < 2:
        return ""
    mild, strong = v[0].mean, max(e.mean for e in v)
    if strong <= 0 or mild > UNDONE * strong:
        return ""
    nearer = ", ".join(f"at {e.setting:g} it is {kl_words(e.kl)}" for e in v[1:])
    eps = f"{v[0].setting:g}"
    if said:
        opener = f" V scaled by {eps} moves it so little because"
    elif below_float(v[0].kl):
        opener = f" Scaling V by {eps} leaves it unchanged within float32 (a KL under {FLOOR_TEXT} nats):"
    else:
        opener = f" Scaling V by {eps} moves it only {kl_words(v[0].kl)}:"
    return (
        f"{opener} the model {POST_NORM}, and the norm undoes a scaling of V until the output "
        f"is small enough for the norm's own epsilon to matter; {nearer}."
    )


def _named(heads: Sequence[tuple[int, int]]) -> str:
    """``2 heads (layer 5, head 2 and layer 7, head 0)``: named when ``fit`` names them."""
    n = len(heads)
    named = f" ({fit.heads_words(heads)})" if n <= fit.NAME_HEADS else ""
    return count(n, "head") + named


def sink_rate(first_prob: Heads, first_focus: Heads) -> Finding | None:
    """Gu et al.'s Sink_1^eps over the set and where it disagrees with the argmax measure.

    first_prob: pooled mean first-token probability per head (``sinks.pooled_scores``);
    first_focus: pooled first-token focus per head. None when there is no first_prob.
    """
    if not first_prob:
        return None
    rates = sinks.sink_rates(first_prob)
    diff = sinks.compare_sinks(first_prob, first_focus)
    full = [k for k, v in rates.by_layer.items() if v == 100.0]
    text = (
        f"By the literature's measure (a head is a sink when the first token gets more than "
        f"{rates.eps:g} of its attention on average), {percent(rates.overall / 100)} of heads "
        "are sinks"
    )
    if full:
        text += f", and every head of {index_set(full, 'layer', len(rates.by_layer))} is one"
    parts = []
    if diff.by_probability_only:
        n = len(diff.by_probability_only)
        parts.append(f"{_named(diff.by_probability_only)} {plural('gives', n)} the first token "
                     "that much probability without making it the top key for most queries")  # fmt: skip
    if diff.by_argmax_only:
        n = len(diff.by_argmax_only)
        parts.append(f"{_named(diff.by_argmax_only)} {plural('makes', n)} it the top key for "
                     "most queries with less probability")  # fmt: skip
    n_differ = len(diff.by_probability_only) + len(diff.by_argmax_only)
    text += ". " + (
        f"The argmax measure disagrees on {count(n_differ, 'head')}: {join_and(parts)}."
        if parts
        else "The argmax measure (top key for most queries) agrees on every head."
    )
    return Finding("sink-rate", text, "set-sink-rate")


def key_findings(
    set_tables: Mapping[str, Any],
    interventions: Interventions | None,
    post_norm: PostNorm = NO_POST_NORM,
) -> list[Finding]:
    """Every finding the results support, in reading order.

    set_tables: ``set.json``'s ``tables`` (focus_by_sentence, focus_pooled, impact_pooled;
    focus_by_sentence may carry ``first_prob``). interventions: the typed grids (None: none).
    post_norm: the model's post-attention norm, if any (``apparatus.post_norm``).
    """
    pooled = set_tables.get("focus_pooled")
    by_sentence = columns(set_tables.get("focus_by_sentence"))
    first = per_head(pooled, "first_focus")
    out: list[Finding | None] = []
    if first:
        out.append(sink_onset(first, by_sentence or None))
        if "first_prob" in by_sentence:
            out.append(sink_rate(sinks.pooled_scores(by_sentence), first))
    if by_sentence:
        out.append(persistent_sinks(by_sentence))
    selves = per_head(pooled, "self_focus")
    if selves:
        out.append(self_focus_heads(selves))
    out.append(impact_peak(set_tables.get("impact_pooled"), post_norm.sizes_before))
    out.append(intervention_effect(interventions, post_norm.present))

    out.extend(role_findings(set_tables))
    return [f for f in out if f is not None]
