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

from attnreport.jsontypes import Row
from attnreport.results.interventions import MeanGrid, ScalingGrid
from attnreport.site.words import effects, findings, fit, wording
from attnreport.site.words.readings import columns
from attnreport.site.words.wording import capitalise, head_name, index_set, percent, times
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


def best(rs: Sequence[Row], field: str) -> Row | None:
    """The row with the largest ``field``; ties go to the lower layer, then head."""
    if not rs:
        return None
    return max(rs, key=lambda r: (float(r[field]), -int(r["layer"]), -int(r.get("head", 0))))


def first_token_layers(focus: Sequence[Row], field: str = "first_focus") -> list[int]:
    """Layers in which most heads send most queries to the first token."""
    out = []
    for layer, values in by_layer(focus, field).items():
        if sum(v > MOST for v in values) > MOST * len(values):
            out.append(layer)
    return out


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


def focus_summary(focus: Sequence[Row]) -> list[str]:
    """Part 1 text: which layers look at the first token, the strongest self-focus head."""
    if not focus or all(int(r.get("n_queries", 1)) == 0 for r in focus):
        return ["This sentence has a single token, so no query has a choice of keys."]
    lead = first_token_lead(focus)
    n_first = sum(float(r["first_focus"]) > MOST for r in focus)
    text = [
        f"{lead} Across the sentence, {n_first} of {len(focus)} heads make the first "
        "token the top key for most queries."
    ]
    self_head = best(focus, "self_focus")
    if self_head is None or float(self_head["self_focus"]) == 0:
        text.append("No head ever makes a token its own top key.")
    else:
        text.append(
            f"The strongest self-focus head is {head_name(self_head['layer'], self_head['head'])}:"
            f" for {pct(self_head['self_focus'])} of queries its top key is the query token itself."
        )
    sharp = best(focus, "concentration")
    if sharp is not None:
        text.append(
            f"The most decided head is {head_name(sharp['layer'], sharp['head'])}: on average its "
            f"top key gets {fit.margin_words(sharp['concentration'])}."
        )
    return text


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
    before_norm: bool = False,
) -> list[str]:
    """Part 3 text: the layer whose attention block changes the hidden state most.

    dim: the hidden size, which decides when a cosine is a direction (``fit.cosine_words``);
    None: the cosine is given without a direction. before_norm: the model normalises the
    block's output before adding it and these sizes were taken before that norm (results
    before schema 8: said).
    """
    text = []
    layers = {k: sum(v) / len(v) for k, v in by_layer(block_impact, "magnitude").items()}
    if layers:
        top = max(layers, key=lambda k: (layers[k], -k))
        low = min(layers, key=lambda k: (layers[k], k))
        text.append(
            f"The attention block of layer {top} changes the hidden state most: its output is "
            f"on average {times(layers[top], 'the hidden state')}, against "
            f"{_relative(layers[low])} in layer {low}."
        )
    heads = _mean_by_head(head_impact)
    if heads:
        strongest = best(heads, "magnitude")
        assert strongest is not None
        cosine = float(strongest["orientation"])
        way = (
            f"it {fit.cosine_words(cosine, dim)}"
            if dim
            else f"its cosine with the hidden state is {num(cosine, 2)}"
        )
        text.append(
            f"The head with the largest update is {head_name(strongest['layer'], strongest['head'])}"
            f" ({times(strongest['magnitude'], 'the hidden state')}); on average {way}."
        )
    if text and before_norm:
        text.append(
            f"This model {effects.POST_NORM}, and these sizes are taken before that norm: they "
            "compare layers and heads with each other, not with what the block adds."
        )
    return text


def _relative(ratio: float) -> str:
    """A second size ratio after ``times``: ``9%`` or ``1.2 times``."""
    return percent(ratio) if float(ratio) < 1 else f"{num(ratio)} times"


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


def _nats(value: float) -> str:
    return wording.quantity(value, "nat")


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
    least += (
        f" leaves it unchanged within float32 (under {effects.FLOOR_TEXT} nats)"
        if effects.below_float(low.kl)
        else f" changes it least, {effects.kl_words(low.kl)}"
    )
    return (
        f"Scaling {what} by {eps:g} in layer {layer} changes the next-token distribution "
        f"most, a KL divergence of {effects.kl_words(kl)}; {least}."
        + (findings.v_undone(found, said=bool(mildest) and mildest[0] is low) if post_norm else "")
    )


def mean_summary(mean: MeanGrid, sentence: int, layer: int) -> str | None:
    """Part 4 text for the mean-replacement cells of one sentence."""
    cells = [c for c in mean.cells if int(c.setting) == sentence]
    if not cells:
        return None
    parts = [f"{c.target} {_nats(mean_kl(c))}" for c in sorted(cells, key=lambda c: c.target)]
    top = max(cells, key=lambda c: (mean_kl(c), c.target))
    return (
        f"Replacing {top.target} in layer {layer} by its mean over the token positions "
        f"changes the next-token distribution most for this sentence (mean KL divergence per "
        f"position: {join_and(parts)})."
    )


def set_summary(pooled: Sequence[Row], impact: Sequence[Row], n_sentences: int) -> list[str]:
    """Index text: set-wide first-token layers, the head that varies most, the biggest mover."""
    first = [dict(r, first_focus=r["value"]) for r in pooled if r["statistic"] == "first_focus"]
    text = []
    if first:
        lead = first_token_lead(first)
        text.append(f"Pooled over the {n_sentences} sentences: {lead}")
        spread = best([dict(r, spread=float(r["max"]) - float(r["min"])) for r in first], "spread")
        if spread is not None and spread["spread"] > 0:
            text.append(
                f"{capitalise(head_name(spread['layer'], spread['head']))} varies most between "
                "sentences: "
                f"its first-token share ranges from {pct(spread['min'])} to {pct(spread['max'])}."
            )
    layers_mag = {k: sum(v) / len(v) for k, v in by_layer(impact, "magnitude").items()}
    if layers_mag:
        top = max(layers_mag, key=lambda k: (layers_mag[k], -k))
        text.append(
            f"Heads in layer {top} change the hidden state most, with updates on average "
            f"{times(layers_mag[top], 'the hidden state')}."
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
