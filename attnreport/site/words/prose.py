"""Sentences that state what the data shows, computed from results tables.

Every function reads column tables (``{"columns": {name: [values]}}``, see
``docs/results-schema.md``) or the typed intervention grids and returns plain text; nothing here is hard-coded to one
model or one sentence. Ties are broken towards the lower layer, then the lower head.
Numbers, ranges and lists follow the prose rules of ``wording``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from attnreport.analyses import sinks
from attnreport.jsontypes import Row
from attnreport.results.interventions import MeanGrid, ScalingGrid
from attnreport.site.words import effects, findings, fit, wording
from attnreport.site.words.readings import columns, sink_layers
from attnreport.site.words.wording import capitalise, head_set, index_set, times
from attnreport.vocabulary import MOST


def rows(table: Any) -> list[Row]:
    """The rows of a column table (a typed results table, or ``{"columns": ...}``), as
    dicts of plain Python values (empty for a missing table)."""
    if table is None:
        return []
    if hasattr(table, "arrays"):
        cols = {name: values.tolist() for name, values in table.arrays().items()}
    else:
        cols = columns(table)
    names = sorted(cols)
    n = len(cols[names[0]]) if names else 0
    return [{k: cols[k][i] for k in names} for i in range(n)]


join_and = wording.join_and
pct = wording.percent  # a share as a percentage with the precision it needs
num = wording.number  # a decimal with three significant digits


def layer_list(layers: Iterable[int], total: int | None = None) -> str:
    """``Layer 3``, ``Layers 2-9 and 12-29`` or ``All 30 layers`` (see ``wording.index_set``)."""
    return capitalise(index_set(layers, "layer", total))


def by_layer(rs: Iterable[Row], field: str) -> dict[int, list[float]]:
    """Values of ``field`` grouped by layer, layers in ascending order."""
    out: dict[int, list[float]] = defaultdict(list)
    for r in rs:
        out[int(r["layer"])].append(float(r[field]))
    return dict(sorted(out.items()))


def first_token_layers(focus: Sequence[Row], field: str = "first_focus") -> list[int]:
    """The sink layers of ``focus`` rows (``readings.sink_layers``)."""
    return sink_layers({(int(r["layer"]), int(r.get("head", 0))): float(r[field]) for r in focus})


def first_token_lead(focus: Sequence[Row], field: str = "first_focus") -> str:
    """``Layers 2-9 and 12-29 put most heads on the first token.`` (or all, or none)."""
    layers = first_token_layers(focus, field)
    n_layers = len(by_layer(focus, field))
    if not layers:
        return "No layer puts most of its heads on the first token."
    if len(layers) == n_layers > 1:
        return f"{layer_list(layers, n_layers)} put most of their heads on the first token."
    phrase = layer_list(layers, n_layers)
    return f"{phrase} {wording.verb_for(phrase, 'puts')} most heads on the first token."


def _heads_with(focus: Sequence[Row], field: str, above: float) -> list[tuple[int, int]]:
    return [(int(r["layer"]), int(r["head"])) for r in focus if float(r[field]) > above]


def focus_summary(focus: Sequence[Row]) -> list[str]:
    """Part 1 text: which layers look at the first token, and how many heads look at the
    query itself or decide sharply (counted against stated thresholds, never the one
    strongest head)."""
    if not focus or all(int(r.get("n_queries", 1)) == 0 for r in focus):
        return ["This sentence has a single token, so no query has a choice of keys."]
    lead = first_token_lead(focus)
    n_first = sum(sinks.is_argmax_sink(r["first_focus"]) for r in focus)
    text = [
        f"{lead} Across the sentence, {n_first} of {len(focus)} heads make the first "
        "token their top key for more than half of their queries."
    ]
    n_layers = len(by_layer(focus, "first_focus"))
    selves = _heads_with(focus, "self_focus", MOST)
    text.append(
        f"{len(selves)} of {len(focus)} heads make the query token itself their top key for "
        f"more than half of their queries" + (f" ({_where(selves, n_layers)})." if selves else ".")
    )
    sharp = _heads_with(focus, "concentration", MOST)
    text.append(
        f"In {len(sharp)} of {len(focus)} heads the top key leads the runner-up by more than "
        "half of the probability on average" + (f" ({_where(sharp, n_layers)})." if sharp else ".")
    )
    return text


def _where(heads: Sequence[tuple[int, int]], n_layers: int) -> str:
    """The heads grouped by layer (``wording.head_set``), or past ``fit.NAME_HEADS`` heads
    the layers they lie in."""
    if len(heads) <= fit.NAME_HEADS:
        return head_set(heads)
    return "in " + index_set({a for a, _ in heads}, "layer", n_layers)


def _span(row: Row) -> int:
    """The queries a row stands for: 1, or a pooled row's bin (``results.pooling``)."""
    return int(row.get("span", 1))


def _spans(rows: Sequence[Row]) -> int:
    return sum(_span(r) for r in rows)


def breakdown_summary(breakdown: Sequence[Row], terms: Sequence[str]) -> str | None:
    """Which score term is largest for the top key most often (rank-0 rows)."""
    top = [r for r in breakdown if int(r["rank"]) == 0 and all(t in r for t in terms)]
    if not top:
        return None
    wins: dict[str, int] = dict.fromkeys(terms, 0)
    for r in top:  # a pooled row counts for its bin's queries, by the bin's mean terms
        wins[max(terms, key=lambda t: (abs(float(r[t])), -terms.index(t)))] += _span(r)
    term = max(terms, key=lambda t: (wins[t], -terms.index(t)))
    name = term.replace("_", "-")
    return (
        f"Split into its parts, the {name} term is the largest part of the top key's score "
        f"in {pct(wins[term] / _spans(top))} of rows."
    )


def _trend(values: dict[int, float], what: str) -> str:
    """A layer curve by its runs and peaks (``fit.curve_words``), not by its two ends."""
    return (
        f"Averaged over heads, the share of queries whose top key is {what}, layer by layer: "
        f"{fit.curve_words(values)}."
    )


def layers_summary(focus: Sequence[Row]) -> list[str]:
    """Part 2 text: how first-token and self focus move through the layers."""
    first = {k: sum(v) / len(v) for k, v in by_layer(focus, "first_focus").items()}
    if len(first) < 2:
        return ["The model has a single layer, so there is no change across layers to show."]
    self_ = {k: sum(v) / len(v) for k, v in by_layer(focus, "self_focus").items()}
    return [_trend(first, "the first token"), _trend(self_, "the query token itself")]


def impact_summary(
    head_impact: Sequence[Row],
    block_impact: Sequence[Row],
    dim: int | None = None,
    post_norm: effects.PostNorm = effects.NO_POST_NORM,
) -> list[str]:
    """Part 3 text: how large the attention block's output is over the layers, and how
    the heads' updates compare with the hidden state (sizes and direction, counted
    against 3/√d), as medians and ranges, never the one largest layer or head.

    dim: the hidden size, which decides when a cosine is a direction (``fit.cosine_words``);
    None: no direction is counted. post_norm: the model's post-attention norm, if any
    (``apparatus.post_norm``): the sizes are then of what the norm adds, whose size its
    gain sets (a block can add several times the hidden state), or, in results before
    schema 8, taken before it: either is said.
    """
    text = []
    layers = {k: sum(v) / len(v) for k, v in by_layer(block_impact, "magnitude").items()}
    if layers:
        sizes = sorted(layers.values())
        text.append(
            "Over the layers, the attention block's output is a median "
            f"{times(float(np.median(sizes)), 'the hidden state')} (the layers range from "
            f"{wording.size_range(sizes[0], sizes[-1])})."
        )
    heads = _mean_by_head(head_impact)
    if heads:
        size = float(np.median([float(h["magnitude"]) for h in heads]))
        line = f"A head's update is a median {times(size, 'the hidden state')}"
        if dim:
            limit = fit.cosine_threshold(dim)
            along = sum(float(h["orientation"]) > limit for h in heads)
            against = sum(float(h["orientation"]) < -limit for h in heads)
            line += (
                f"; on average over the tokens, {along} of {len(heads)} heads point along it "
                f"and {against} against it (cosine past ±{num(limit, 2)} = 3/√{dim})"
            )
        text.append(line + ".")
    if text and post_norm.sizes_before:
        text.append(
            f"This model {effects.POST_NORM}, and these sizes are taken before that norm: they "
            "compare layers and heads with each other, not with what the block adds."
        )
    elif text and post_norm.present:
        text.append(
            f"This model {effects.POST_NORM}: these sizes are of what the norm adds, each "
            "head's share of it, and the norm rescales the heads' output to a size set by its "
            "learned gain, whatever that output's own size."
        )
    return text


def _mean_by_head(head_impact: Sequence[Row]) -> list[Row]:
    acc: dict[tuple[int, int], list[Row]] = defaultdict(list)
    for r in head_impact:
        acc[(int(r["layer"]), int(r["head"]))].append(r)
    return [
        {
            "layer": lh[0],
            "head": lh[1],
            # a pooled row (``results.pooling``) stands for its ``span`` queries
            "magnitude": sum(float(r["magnitude"]) * _span(r) for r in rs) / _spans(rs),
            "orientation": sum(float(r["orientation"]) * _span(r) for r in rs) / _spans(rs),
        }
        for lh, rs in sorted(acc.items())
    ]


mean_kl = effects.mean_kl  # mean of a cell's per-position KL values (0 for none)


_nats = effects.nats  # a KL in words, 0 below float32 round-off


def scaling_summary(scaling: ScalingGrid, layer: int, post_norm: bool = False) -> str | None:
    """Part 4 text: which scaling changes the next-token distribution most and least,
    each by the report's KL convention over the sentences scaled; with ``post_norm``, also a
    post-attention norm undoing a mild scaling of V (``v_undone``)."""
    found = effects.scaling_effects(scaling)
    if not found:
        return None
    targets, eps, kl = effects.top_scaling(found)
    # below float32's round-off every KL is 0: the least is then the first of them in order
    low = min(found, key=lambda e: (0.0 if effects.below_float(e.kl) else e.mean,
                                    effects.ORDER.get(e.target, 3), e.setting))  # fmt: skip
    what = join_and([effects.target_words(t) for t in targets], "or")
    mildest = effects.mildest_first(found, "V")
    least = f"scaling {effects.target_words(low.target)} by {low.setting:g}"
    if effects.below_float(low.kl):
        least += f" leaves it unchanged within float32 (under {effects.FLOOR_TEXT} nats)"
    else:  # "least" on every sentence, or said to hold on average only
        below = effects.rivals(found, (low.target,), low.setting, highest=False)
        least += (
            f" changes it least{' on average' if below else ''}, {effects.kl_words(low.kl)}"
            + effects.rivals_words(below, "less")
        )
    above = effects.rivals(found, targets, eps)
    return (
        f"Scaling {what} by {eps:g} in layer {layer} changes the next-token distribution "
        f"most{' on average' if above else ''}, a KL divergence of {effects.kl_words(kl)}"
        f"{effects.rivals_words(above, 'more')}; {least}."
        + (findings.v_undone(found, said=bool(mildest) and mildest[0] is low) if post_norm else "")
    )


def mean_summary(mean: MeanGrid, sentence: int, layer: int) -> str | None:
    """Part 4 text for the mean-replacement cells of one sentence: every target's effect,
    in Q, K, V order, never the largest of them singled out (issue 39: a maximum picked
    from a handful of close values is not a finding)."""
    cells = [c for c in mean.cells if int(c.setting) == sentence]
    if not cells:
        return None
    ordered = sorted(cells, key=lambda c: (effects.ORDER.get(c.target, 3), c.target))
    parts = [f"{c.target} {_nats(mean_kl(c))}" for c in ordered]
    what = join_and([c.target for c in ordered], "or")
    return (
        f"Replacing {what} in layer {layer} by its mean over the token positions moves the "
        f"next-token distribution of this sentence, as the mean KL divergence per position, "
        f"by {join_and(parts)}."
    )


def set_summary(pooled: Sequence[Row], impact: Sequence[Row], n_sentences: int) -> list[str]:
    """Index text: the set-wide sink layers and the heads' update sizes over the set."""
    first = [dict(r, first_focus=r["value"]) for r in pooled if r["statistic"] == "first_focus"]
    text = []
    if first:
        lead = wording.lowercase_first(first_token_lead(first))
        text.append(f"Pooled over the {n_sentences} sentences, {lead}")
    sizes = [float(r["magnitude"]) for r in impact]
    if sizes:
        text.append(
            f"A head's update, averaged over the set's tokens, is a median "
            f"{times(float(np.median(sizes)), 'the hidden state')} (the heads range from "
            f"{wording.size_range(min(sizes), max(sizes))})."
        )
    return text


def pages_note(names: Sequence[str | None]) -> str:
    """What the index says when only some sentences have a page (``--pages``); else ""."""
    count = sum(name is not None for name in names)
    if count == len(names):
        return ""
    return (
        f"Pages for {count:,} of {len(names):,} sentences; the figures and findings of this "
        "page cover every sentence, and the linked sentences open their page."
    )
