"""Key findings: the handful of scoped claims that open the report, computed from results.

Each finding is a ``Finding``: its text (written with ``wording``) and the key of the
figure that shows it, so a page can link to that figure. Inputs are the typed results
tables by name (``results.types.set_tables``: ``focus_by_sentence``, ``focus_pooled``,
``impact_pooled``, ...) and the typed interventions; plain column tables
(``{name: list}``, bare or in ``{"columns": {...}}``) are read the same way.

A finding states what holds over a stated band of layers or group of heads, with its
spread across sentences (``fit.median_words``) or across heads; never a maximum picked
from a list, and never a number below its own precision (``effects.nats``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

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
    every_target,
    kl_words,
    mean_text,
    measured_as,
    mildest_first,
    scaling_effects,
)
from attnreport.site.words.readings import (
    Finding,
    Heads,
    arrays,
    columns,
    layer_means,
    per_head,
    sink_layers,
)
from attnreport.site.words.role_findings import role_findings
from attnreport.site.words.wording import (
    MAX_ITEMS,
    count,
    index_set,
    join_and,
    number,
    percent,
    plural,
)

MAX_FINDINGS = 5  # sinks, massive activations, orientation, head roles, interventions


def _medians_by_sentence(by_sentence: Any, layers: Sequence[int], statistic: str) -> list[float]:
    """Per sentence (those with queries), the median of ``statistic`` over the heads of
    ``layers``."""
    c = arrays(by_sentence)
    if not c:
        return []
    keep = np.isin(c["layer"], list(layers)) & (c["n_queries"] > 0)
    return [
        float(np.median(c[statistic][keep & (c["sentence"] == s)]))
        for s in np.unique(c["sentence"][keep])
    ]


def sink_onset(first_focus: Heads, by_sentence: Any = None) -> Finding:
    """Where the first-token sink is (``readings.sink_layers``) and how much of the queries
    it takes there: per sentence, the median first-token focus over the sink layers'
    heads, given as its median over the sentences with its spread (``fit.median_words``)."""
    layers = sink_layers(first_focus)
    n_layers = len(layer_means(first_focus))
    rule = (
        "more than half of the heads make the first token their top key for more than half "
        "of their queries"
    )
    if not layers:
        text = f"No layer has a first-token sink: in no layer do {rule}."
        return Finding("sink-onset", text, "set-first-focus")
    where = index_set(layers, "layer", n_layers)
    opening = (
        "The first token is an attention sink in every layer"
        if len(layers) == n_layers
        else f"The first token is an attention sink in {where} ({len(layers)} of {n_layers} layers)"
    )
    text = f"{opening}: in each, {rule}."
    per_sentence = _medians_by_sentence(by_sentence, layers, "first_focus") if by_sentence else []
    if per_sentence:
        text += (
            " There the median head makes it the top key for "
            f"{fit.median_words(per_sentence)} of its queries."
        )
    return Finding("sink-onset", text, "set-first-focus")


def intervention_effect(
    interventions: Interventions | None, post_norm: bool = False
) -> Finding | None:
    """What scaling Q, K or V by the smallest epsilon, and replacing it by its mean, did to
    the next-token distribution (mean KL per position), every target said; with
    ``post_norm`` (the model normalises the block's output before adding it) also why a
    mild scaling of V barely moves it (``v_undone``). None without scaling cells."""
    if interventions is None or not interventions.scaling.cells:
        return None
    layer, scaling = interventions.layer, interventions.scaling
    effects = scaling_effects(scaling)
    if not effects:
        return None
    if all(below_float(e.kl) for e in effects):
        text = (
            f"Scaling Q, K or V in layer {layer} left the next-token distribution unchanged "
            f"within float32 (a KL under {FLOOR_TEXT} nats at every scale factor)."
        )
    else:
        eps = min(e.setting for e in effects)
        strongest = [e for e in effects if e.setting == eps]
        of = f" of sentence {scaling.sentence}" if max(e.kl.n for e in strongest) < 2 else ""
        text = (
            f"Scaling Q, K or V by {eps:g} in layer {layer} moves the next-token distribution"
            f"{of}, as {measured_as(strongest)}, by {every_target(strongest)}."
            + (v_undone(effects) if post_norm else "")
        )
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


def rate_basis_words(basis: sinks.RateBasis) -> str:
    """What a sink rate rests on, and whether its inputs are as long as Gu et al.'s."""
    lengths = (
        f"{basis.shortest}"
        if basis.shortest == basis.longest
        else f"{basis.shortest}-{basis.longest}"
    )
    text = (
        f"over {count(basis.sentences, 'sentence')} of {lengths} tokens "
        f"({count(basis.queries, 'query')}, {count(basis.heads, 'head')})"
    )
    if not basis.short:
        return text + f": each at least the {sinks.GU_TOKENS} tokens Gu et al. measure on"
    return text + (
        f"; Gu et al. measure on inputs of {sinks.GU_TOKENS} tokens and "
        f"{count(basis.short, 'sentence')} here {plural('is', basis.short)} shorter, "
        "where the first token takes a larger share by position alone, so the rate is not "
        "theirs to compare with"
    )


def sink_rate(
    first_prob: Heads, first_focus: Heads, basis: sinks.RateBasis | None = None
) -> Finding | None:
    """Gu et al.'s Sink_1^eps over the set and where it disagrees with the argmax measure.

    first_prob: pooled mean first-token probability per head (``sinks.pooled_scores``);
    first_focus: pooled first-token focus per head; basis: what they rest on
    (``sinks.rate_basis``), said when given. None when there is no first_prob.
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
    if basis is not None:
        text += f" Both are taken {rate_basis_words(basis)}."
    return Finding("sink-rate", text, "set-sink-rate")


def massive_activations(set_tables: Mapping[str, Any]) -> Finding | None:
    """Massive activations (Sun et al. 2024): the layers where the largest residual
    activation sits on the first token in every sentence (``massive_by_sentence``; results
    before schema 9: the set's largest per layer), its dimensions and its ratio to the
    layer's median activation, with the spread over those rows. None without the table."""
    rows = arrays(set_tables.get("massive_by_sentence"))
    each = bool(rows)
    rows = rows or arrays(set_tables.get("massive_activations"))
    if not rows or not len(rows.get("layer", [])):
        return None
    layers = sorted(int(v) for v in np.unique(rows["layer"]))
    on_first = [lay for lay in layers if bool((rows["position"][rows["layer"] == lay] == 0).all())]
    n_sentences = len(np.unique(rows["sentence"]))
    where = f"in every one of the {count(n_sentences, 'sentence')}" if each else "over the set"
    if not on_first:
        text = f"In no layer does the largest residual activation sit on the first token {where}."
        return Finding("massive-activations", text, "massive-activations")
    keep = np.isin(rows["layer"], on_first)
    dims = sorted({int(d) for d in rows["dimension"][keep]})
    ratios = [float(np.median(rows["ratio"][keep & (rows["sentence"] == s)]))
              for s in np.unique(rows["sentence"][keep])]  # fmt: skip
    band = index_set(on_first, "layer", len(layers))
    dim_words = (
        index_set(dims, "dimension") if len(dims) <= MAX_ITEMS else f"{len(dims)} dimensions"
    )
    ratio = "its ratio to the layer's median |activation|"
    spread = (
        f"{ratio}, per sentence the median over those layers, is "
        f"{fit.median_words(ratios, lambda r: number(r, 3))}"
        if each
        else f"{ratio} is a median {number(float(np.median(rows['ratio'][keep])), 3)} over those layers"
    )
    text = (
        f"Massive activations (Sun et al., 2024): in {band}, the largest residual activation "
        f"sits on the first token {where}, in {dim_words}; {spread}."
    )
    return Finding("massive-activations", text, "massive-activations")


def orientation(impact: Any, dim: int | None, before_norm: bool = False) -> Finding | None:
    """How the heads write relative to the hidden state: the heads whose mean cosine
    between update and hidden state (over the set's tokens) is past ±3/√d
    (``fit.cosine_threshold``), and the median and quartiles of that cosine over the
    heads. None without the pooled impact or the hidden size."""
    cos = per_head(impact, "orientation")
    if not cos or not dim:
        return None
    limit = fit.cosine_threshold(dim)
    values = np.array(list(cos.values()))
    along = sorted(k for k, v in cos.items() if v > limit)
    against = sorted(k for k, v in cos.items() if v < -limit)
    q1, median, q3 = (float(np.quantile(values, q)) for q in (0.25, 0.5, 0.75))
    n = len(values)
    most = len(along) > n / 2
    counted = (
        f"Most heads write along the hidden state, {len(along)} of the {n}"
        if most
        else f"{len(along)} of the {n} heads write along the hidden state"
    )
    if against:
        counted += f"{',' if most else ''} and {len(against)} against it"
    text = (
        f"{counted} (mean cosine between update and hidden state over the set's "
        f"tokens past ±{number(limit, 2)} = 3/√{dim}, which two random directions in {dim} "
        f"dimensions rarely pass); over all heads that cosine has a median {number(median, 2)} "
        f"(quartiles {number(q1, 2)} to {number(q3, 2)})."
    )
    if before_norm:
        text += (
            " These updates are taken before the model's post-attention norm, which rescales "
            "each dimension of the block's output before it is added."
        )
    return Finding("orientation", text, "set-head-impact")


def key_findings(
    set_tables: Mapping[str, Any],
    interventions: Interventions | None,
    post_norm: PostNorm = NO_POST_NORM,
    dim: int | None = None,
) -> list[Finding]:
    """Every finding the results support, in reading order: at most ``MAX_FINDINGS``, the
    sinks by both measures in one (``Finding.more``).

    set_tables: ``set.json``'s ``tables`` (focus_by_sentence, focus_pooled, impact_pooled;
    focus_by_sentence may carry ``first_prob``). interventions: the typed grids (None: none).
    post_norm: the model's post-attention norm, if any (``apparatus.post_norm``); dim: the
    hidden size (a cosine's threshold; None: no orientation finding).
    """
    pooled = set_tables.get("focus_pooled")
    by_sentence = columns(set_tables.get("focus_by_sentence"))
    first = per_head(pooled, "first_focus")
    out: list[Finding | None] = []
    if first:
        onset = sink_onset(first, by_sentence or None)
        if "first_prob" in by_sentence:  # the literature's measure of the same sinks
            basis = sinks.rate_basis(by_sentence) if "sentence" in by_sentence else None
            rate = sink_rate(sinks.pooled_scores(by_sentence), first, basis)
            onset = replace(onset, more=(rate,)) if rate else onset
        out.append(onset)
    out.append(massive_activations(set_tables))
    out.append(orientation(set_tables.get("impact_pooled"), dim, post_norm.sizes_before))
    out.extend(role_findings(set_tables))
    out.append(intervention_effect(interventions, post_norm.present))
    return [f for f in out if f is not None]
