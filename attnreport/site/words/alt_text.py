"""Alt text for every figure, computed from the data it draws.

What a screen reader should hear instead of the chart: what is plotted (axes, marks, the
layer and head shown) and its main finding. One small function per figure; the figure's
registry entry (``charts.registry.FigureEntry.alt``) names it. Inputs (``AltData``) are
the typed tables the chart builders read (``docs/results-schema.md``), by name: a
sentence's and the set's, the typed interventions, and the (layer, head) the page opens on.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from attnreport.analyses import sinks
from attnreport.charts.spec.position_window import window_alt_note
from attnreport.charts.spec.scales import STRIP_BELOW
from attnreport.results.interventions import Interventions
from attnreport.site.words import wording
from attnreport.site.words.effects import (
    kl_words,
    mean_effects,
    nats,
    rivals,
    scaling_effects,
    target_words,
    top_scaling,
)
from attnreport.site.words.fit import lead_words
from attnreport.site.words.readings import columns, layer_means, per_head, top_key
from attnreport.vocabulary import FOCUS_NAMES, TERMS

MEANINGS = {
    "self_focus": "the share of queries whose top key is the query token itself",
    "first_focus": "the share of queries whose top key is the first token",
    "concentration": "the mean lead of the top key over the runner-up",
}


@dataclass(frozen=True)
class AltData:
    """Everything an alt text may read; a figure uses the parts it draws.

    tables: a sentence's tables by name (``results.types.sentence_tables``: typed tables,
    or plain column tables); n_tokens: its length; set_tables: the set's tables by name
    (``results.types.set_tables``); interventions: the typed grids (None: none); view:
    the (layer, head) the page opens on.
    """

    tables: Mapping[str, Any] = field(default_factory=dict)
    n_tokens: int = 0
    set_tables: Mapping[str, Any] = field(default_factory=dict)
    interventions: Interventions | None = None
    view: tuple[int, int] = (0, 0)


def _table(data: AltData, name: str) -> dict[str, np.ndarray]:
    cols = columns(data.tables.get(name))
    return {k: np.asarray(v) for k, v in cols.items()}


def _rows_of(table: dict[str, np.ndarray], **where: int) -> dict[str, np.ndarray]:
    if not table:
        return {}
    keep = np.ones(len(next(iter(table.values()))), dtype=bool)
    for name, value in where.items():
        keep &= table[name] == value
    return {k: v[keep] for k, v in table.items()}


def _value(v: float, statistic: str) -> str:
    return wording.percent(v) if statistic != "concentration" else lead_words(v)


def attention_map(data: AltData) -> str:
    layer, head = data.view
    top = _rows_of(_table(data, "top"), layer=layer, head=head)
    text = (
        f"Heat map of the attention scores of {wording.head_name(layer, head)} over the sentence's "
        f"{wording.count(data.n_tokens, 'token')}: rows are current tokens, columns the earlier "
        "tokens they can attend to."
    )
    q = top.get("query", np.array([]))
    if (q >= 1).any():
        first, self_ = top["top_is_first"][q >= 1], top["top_is_self"][q >= 1]
        text += (
            f" The first token is the top target for {wording.percent(first.mean())} of tokens and the "
            f"token itself for {wording.percent(self_.mean())}."
        )
    return text


def breakdown(data: AltData) -> str:
    layer, head = data.view
    rows = _rows_of(_table(data, "breakdown"), layer=layer, head=head, rank=0)
    text = (
        f"Stacked bars, one per current token, splitting the score of its top target in "
        f"{wording.head_name(layer, head)} into position, bias, content and query-only terms."
        + window_alt_note(data.n_tokens)
    )
    terms = [t for t in TERMS if t in rows]
    if terms and len(rows[terms[0]]):
        sizes = np.abs(np.stack([rows[t].astype(float) for t in terms]))  # (term, query)
        wins = np.bincount(sizes.argmax(0), minlength=len(terms))
        best = int(wins.argmax())
        name = terms[best].replace("_", "-")
        text += f" The {name} term is the largest for {wording.percent(wins[best] / wins.sum())} of tokens."
    return text


def bias_position(data: AltData) -> str:
    layer, head = data.view
    rows = _rows_of(_table(data, "breakdown"), layer=layer, head=head, rank=0)
    flat = "bias" in rows and not np.any(_table(data, "breakdown")["bias"] != 0)
    drawn = ("position",) if flat and "position" in rows else ("bias", "position")
    lines = (
        "One line against the current token: the position term"
        if drawn == ("position",)
        else "Two lines against the current token: the bias term and the position term"
    )
    text = (
        f"{lines} of the score of each token's top target, {wording.head_name(layer, head)}."
        + window_alt_note(data.n_tokens)
    )
    parts = [_spread(t, rows[t]) for t in ("bias", "position") if t in rows and len(rows[t])]
    return text + (f" Over the sentence, {wording.join_and(parts)}." if parts else "")


def _spread(term: str, values: np.ndarray) -> str:
    lo, hi = wording.number(values.min()), wording.number(values.max())
    return (
        f"the {term} term is {lo} throughout"
        if lo == hi
        else f"the {term} term runs from {lo} to {hi}"
    )


def _focus_lines(heads: dict[tuple[int, int], float], statistic: str, scope: str) -> str:
    name, meaning = FOCUS_NAMES[statistic], MEANINGS[statistic]
    if not heads:
        return f"Line chart of {name} per layer; there is no data."
    n_layers = len({k[0] for k in heads})
    means = layer_means(heads)
    peak = top_key(means)
    best = top_key(heads)
    return (
        f"Line chart of {name} ({meaning}) across {wording.count(n_layers, 'layer')}{scope}, one line "
        f"per head rank. The mean over heads peaks in layer {peak} at {_value(means[peak], statistic)}; "
        f"the highest head is {wording.head_name(*best)} at {_value(heads[best], statistic)}."
    )


def sentence_focus(statistic: str) -> Callable[[AltData], str]:
    def alt(data: AltData) -> str:
        table = _table(data, "focus")
        return _focus_lines(per_head(table, statistic), statistic, " in this sentence")

    return alt


def set_focus(statistic: str) -> Callable[[AltData], str]:
    def alt(data: AltData) -> str:
        heads = per_head(data.set_tables.get("focus_pooled"), statistic)
        return _focus_lines(
            heads,
            statistic,
            ", pooled over the sentence set with a band for its range across sentences",
        )

    return alt


def _head_means(data: AltData, measure: str) -> dict[int, float]:
    rows = _rows_of(_table(data, "head_impact"), layer=data.view[0])
    heads = sorted(set(rows.get("head", np.array([])).tolist()))
    return {h: float(rows[measure][rows["head"] == h].mean()) for h in heads}


def _histograms(data: AltData, what: str) -> str:
    """The figure's kind: a strip per head for few tokens a head (``scales.STRIP_BELOW``:
    the builder's rule), else histograms."""
    rows = _table(data, "head_impact")
    counts = np.unique(np.stack([rows["layer"], rows["head"]]), axis=1, return_counts=True)[1] if rows else []  # fmt: skip
    if len(counts) and counts.max() < STRIP_BELOW:
        return f"Strip plot, one row per head of layer {data.view[0]} and a point per token, of {what}."
    return f"Histograms, one per head of layer {data.view[0]}, of {what}."


def update_magnitude(data: AltData) -> str:
    means = _head_means(data, "magnitude")
    text = _histograms(
        data,
        "the size of the head's update relative to the hidden state, over the sentence's tokens",
    )
    if means:
        h = top_key(means)
        text += f" Head {h} writes the largest updates: {wording.times(means[h], 'the hidden state')} on average."
    return text


def update_orientation(data: AltData) -> str:
    means = _head_means(data, "orientation")
    text = _histograms(data, "the cosine between the head's update and the hidden state")
    if means:
        lo, hi = min(means, key=lambda k: (means[k], k)), top_key(means)
        text += (
            f" Mean cosines run from {wording.number(means[lo], 2)} (head {lo}) to "
            f"{wording.number(means[hi], 2)} (head {hi})."
        )
    return text


def orientation_magnitude(data: AltData) -> str:
    rows = _rows_of(_table(data, "head_impact"), layer=data.view[0])
    text = (
        f"Scatter plot, one point per token and head of layer {data.view[0]}: the relative size "
        "of the update (x) against its cosine with the hidden state (y)."
    )
    if len(rows.get("orientation", [])):
        below = wording.percent((rows["orientation"] < 0).mean())
        text += f" {below} of the points lie below zero, where the update cancels part of the hidden state."
    return text


def impact_by_position(data: AltData) -> str:
    rows = _table(data, "block_impact")
    text = (
        "Line chart, one line per layer, of the size of the attention block's output relative "
        "to the hidden state, against the token position."
    )
    if len(rows.get("magnitude", [])):
        text += window_alt_note(int(rows["query"].max()) + 1)
        means = _by_layer(rows)
        top = top_key(means)
        text += f" Layer {top} changes it most: {wording.times(means[top], 'the hidden state')} on average."
    return text


def _by_layer(rows: dict[str, np.ndarray]) -> dict[int, float]:
    layers = sorted(set(rows["layer"].tolist()))
    return {int(k): float(rows["magnitude"][rows["layer"] == k].mean()) for k in layers}


def set_head_impact(data: AltData) -> str:
    heads = per_head(data.set_tables.get("impact_pooled"), "magnitude")
    best = top_key(heads) if heads else None
    found = (
        f" The largest updates come from {wording.head_name(*best)}: "
        f"{wording.times(heads[best], 'the hidden state')}."
        if best is not None
        else ""
    )
    return (
        "Two heat maps, layers by heads: the mean relative size of each head's update over all "
        "tokens of the set (left) and the mean cosine of the update with the hidden state (right)."
    ) + found


def set_sink_rate(data: AltData) -> str:
    by_sentence = columns(data.set_tables.get("focus_by_sentence"))
    text = (
        "Line chart, one line per measure: the percentage of each layer's heads that are "
        "attention sinks, by Gu et al.'s mean first-token probability above 0.3 and by the "
        "first token being the top key for more than half of the queries."
    )
    if "first_prob" in by_sentence:
        rates = sinks.sink_rates(sinks.pooled_scores(by_sentence, "first_prob"))
        text += f" Over all layers, {wording.percent(rates.overall / 100)} of heads are sinks by the first measure."
    return text


def _grid(data: AltData, kind: str, columns_: str, before_rotation: bool = False) -> str:
    iv = data.interventions
    layer = iv.layer if iv else 0
    text = (
        f"Grid of attention maps of layer {layer}, one head at a time: {columns_}. Colour is the "
        "attention probability, 0 to 1."
    )
    if iv is None:
        return text
    if kind == "scaling":
        found = scaling_effects(iv.scaling)
        if not found:
            return text
        targets, eps, kl = top_scaling(found)
        caveat = ", though not on every sentence" if rivals(found, targets, eps) else ""
        targets = tuple(target_words(t) for t in targets)
        how = f"scaling {wording.join_and(targets, 'or')} by {eps:g}"
    else:
        grid = replace(iv.mean, cells=iv.mean.before_rotation) if before_rotation else iv.mean
        found = mean_effects(grid)
        if not found:
            return text
        # every target in Q, K, V order: the largest of a handful of close means is no
        # finding (issue 39), in the alt text as in the page's prose
        each = wording.join_and([f"{e.target} {nats(e.kl.mean)}" for e in found])
        over = found[0].kl.n
        return text + (
            f" Replacing each by its mean moves the next-token distribution, as the mean KL per "
            f"position{f' over {over} sentences' if over > 1 else ''}, by {each}."
        )
    return text + (
        f" The largest change to the next-token distribution comes from {how}: a KL "
        f"divergence of {kl_words(kl)}{caveat}."
    )


def scaling_grid(data: AltData) -> str:
    iv = data.interventions
    eps = [f"{float(e):g}" for e in (iv.epsilons if iv else ())]
    factors = f" by {wording.join_and(eps, 'or')}" if eps else ""
    shown = {c.target for c in iv.scaling.shown} if iv else set()
    rows = [target_words(t) for t in ("Q", "K", "QK", "V") if t in shown] or ["Q", "K", "V"]
    return _grid(data, "scaling", f"rows {wording.join_and(rows)}, each scaled{factors}")


def _mean_inputs(data: AltData) -> str:
    """The mean grid's inputs it draws, in words ("sentences 0, 1 and 2")."""
    sentences = data.interventions.mean.drawn if data.interventions else ()
    return f"{wording.plural('sentence', len(sentences))} {wording.join_and([str(s) for s in sentences])}"


def mean_grid(data: AltData) -> str:
    inputs = _mean_inputs(data)
    return _grid(
        data,
        "mean",
        f"rows {inputs}, columns the unmodified run and Q, K and V replaced by their mean over "
        "positions",
    )


def mean_grid_before_rotation(data: AltData) -> str:
    inputs = _mean_inputs(data)
    return _grid(
        data,
        "mean",
        f"rows {inputs}, columns the unmodified run and Q and K replaced by their mean over "
        "positions taken before the rotary rotation, then rotated again per position",
        before_rotation=True,
    )
