"""What the comparison index says: findings that compare the models, and each model's
verdicts on the claims the report tests. Pure: typed results in, words out.

A finding states a claim and the number behind it, at a relative depth (``measures``);
where the models agree to the results' precision it says so ("no difference").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from attnreport.analyses import sinks
from attnreport.analyses.grid_kl import Spread
from attnreport.multi.measures import CURVES, ModelSide, apart, depth, depth_match, layer_values
from attnreport.site.apparatus import post_norm
from attnreport.site.words.claims import Claim
from attnreport.site.words.effects import (
    FLOOR_TEXT,
    below_float,
    kl_words,
    mildest_first,
    scaling_effects,
)
from attnreport.site.words.findings import v_undone
from attnreport.site.words.verdicts import CONTRADICTED, PARTLY, SUPPORTED
from attnreport.site.words.wording import index_set, join_and

MOST = 0.5  # "most heads", "most queries": more than half, as the single-model findings
SAME = 1e-6  # the results keep 6 significant digits: closer curves read as identical
SHARES = ("first_focus", "sink_rate", "self_focus")  # curves on one scale (shares of a whole)


@dataclass(frozen=True)
class Comparison:
    """One comparing finding: ``key`` (stable), its text, the figure that shows it."""

    key: str
    text: str
    figure: str


def sink_layers(side: ModelSide) -> list[int]:
    """Layers where most heads make the first token the top key for most queries."""
    pooled = side.set.focus_pooled
    keep = pooled.statistic == "first_focus"
    layers, values = pooled.layer[keep], pooled.value[keep]
    return [
        int(lay)
        for lay in np.unique(layers)
        if (values[layers == lay] > MOST).sum() > MOST * (layers == lay).sum()
    ]


def _where(side: ModelSide, layer: int) -> str:
    return f"layer {layer} of {side.n_layers} (depth {depth(layer, side.n_layers):.2f})"


def sink_onset(sides: Sequence[ModelSide]) -> Comparison:
    """Where the first-token sink forms in each model, on relative depth."""
    parts, depths = [], []
    for side in sides:
        layers = sink_layers(side)
        if layers:
            parts.append(f"in {side.name} from {_where(side, layers[0])}")
            depths.append(depth(layers[0], side.n_layers))
        else:
            parts.append(f"never in {side.name} (no layer where most heads make it the top key)")
    text = "Where the sink forms: " + "; ".join(parts)
    if len(depths) == len(sides) > 1:
        gap = max(depths) - min(depths)
        text += (
            "; at the same relative depth" if gap < SAME else f"; {apart(gap)} in relative depth"
        )
    text += ". A sink layer is one where most heads make the first token the top key for most queries."  # fmt: skip
    return Comparison("sink-onset", text, "compare-first-focus")


def sink_share(sides: Sequence[ModelSide]) -> Comparison:
    """Gu et al.'s overall Sink_1^eps of each model."""
    parts = []
    for side in sides:
        rates = sinks.sink_rates(sinks.pooled_scores(side.set.focus_by_sentence.arrays()))
        parts.append(f"{rates.overall:.0f}% of {side.name}'s {rates.n_heads} heads")
    text = (
        f"Sink heads by Gu et al.'s measure (mean first-token probability above {sinks.EPS:g}): "
        + ", against ".join(parts)
        + "."
    )
    return Comparison("sink-share", text, "compare-sink-rate")


Gap = tuple[str, float, float, float, float]  # statistic, depth, gap, first's, other's


def statistic_gap(sides: Sequence[ModelSide], statistic: str) -> Gap:
    """(statistic, depth, gap, first model's value, other's value) of the largest gap on
    one curve between the first model and each other model (interpolated on depth, at
    the first model's layers). Sink rates count as shares (percent / 100). ``sides``:
    at least two models."""
    first = sides[0]
    base = layer_values(first, statistic)
    x = np.array([depth(lay, first.n_layers) for lay in sorted(base)])
    y = np.array([base[lay] for lay in sorted(base)])
    scale = 100.0 if statistic == "sink_rate" else 1.0  # percent: compare as shares
    best: Gap | None = None
    for other in sides[1:]:
        theirs = layer_values(other, statistic)
        ox = np.array([depth(lay, other.n_layers) for lay in sorted(theirs)])
        oy = np.interp(x, ox, np.array([theirs[lay] for lay in sorted(theirs)]))
        gaps = np.abs(y - oy) / scale
        k = int(gaps.argmax())
        if best is None or gaps[k] > best[2]:
            best = (statistic, float(x[k]), float(gaps[k]), float(y[k]), float(oy[k]))
    assert best is not None, "statistic_gap needs two models"
    return best


def difference(sides: Sequence[ModelSide]) -> Comparison | None:
    """The largest difference between the models' per-layer curves (on the curves that
    share one scale, ``SHARES``), or "no difference" when no curve differs at all. Each
    curve's gap is computed once."""
    if len(sides) < 2:
        return None
    gaps = {s: statistic_gap(sides, s) for s in CURVES}
    others = ", ".join(s.name for s in sides[1:])
    if max(g[2] for g in gaps.values()) <= SAME:
        text = (
            f"No difference: {sides[0].name} and {others} give the same per-layer curves "
            "(first-token focus, sink rate, self focus, head impact) at every relative "
            "depth, to the results' precision."
        )
        return Comparison("difference", text, "compare-first-focus")
    statistic, at, size, mine, theirs = max((gaps[s] for s in SHARES), key=lambda g: g[2])
    name = CURVES[statistic][0]
    layer = round(at * (sides[0].n_layers - 1))
    unit = "% of heads" if statistic == "sink_rate" else ""
    text = (
        f"The models differ most in {name}, at depth {at:.2f} ({sides[0].name}'s layer "
        f"{layer}): {mine:.3g}{unit} for {sides[0].name} against {theirs:.3g}{unit} for "
        f"{others}{_between(sides[1:], at)}."
    ) + bos_note(sides)
    return Comparison("difference", text, f"compare-{statistic.replace('_', '-')}")


def _between(others: Sequence[ModelSide], at: float) -> str:
    """Where the other models' values at relative depth ``at`` come from when a model has
    no layer there: `` (Gemma-3-270M: interpolated between its layers 0 and 1)``."""
    notes = []
    for side in others:
        position = at * (side.n_layers - 1)
        if abs(position - round(position)) > 1e-9:
            low = int(np.floor(position))
            notes.append(f"{side.name}: interpolated between its layers {low} and {low + 1}")
    return f" ({'; '.join(notes)})" if notes else ""


def bos_note(sides: Sequence[ModelSide]) -> str:
    """When some models start every sentence with a BOS token and others do not: their
    "first token" is not the same kind of token, which the first-token measures read."""
    with_bos = [s.name for s in sides if s.manifest.settings.extra.get("bos_added")]
    if not with_bos or len(with_bos) == len(sides):
        return ""
    without = [s.name for s in sides if s.name not in with_bos]
    verb = "starts" if len(with_bos) == 1 else "start"
    return (
        f" The first token differs in kind: {', '.join(with_bos)} {verb} every sentence "
        f"with a BOS token, {', '.join(without)} with the sentence's first word."
    )


def window_note(side: ModelSide) -> str | None:
    """What a model's sliding-window layers do on these sentences, or None without any."""
    windows = side.manifest.model.layer_windows
    if not windows:
        return None
    longest = max((s.n_tokens for s in side.manifest.sentences), default=0)
    size = min(windows.values())
    focus = layer_values(side, "first_focus")
    local = [focus[lay] for lay in windows if lay in focus]
    full = [v for lay, v in focus.items() if lay not in windows]
    layers = index_set(windows, "layer", side.n_layers)
    means = (
        f"first-token focus averages {np.mean(local):.3g} on them against "
        f"{np.mean(full):.3g} on its {len(full)} full-attention layers"
        if local and full
        else f"first-token focus averages {np.mean(local):.3g} on them"
    )
    if longest <= size:
        cut = (
            f"no window cuts a sentence here (the longest has {longest} tokens, the window "
            f"{size}), so local and global layers see the same keys and any difference "
            "between them is learned, not masked"
        )
    else:
        cut = (
            f"the window ({size} tokens) is shorter than the longest sentence ({longest} "
            "tokens), so late queries on those layers cannot see the first token"
        )
    return (
        f"{side.name} has sliding-window attention on {len(windows)} of its {side.n_layers} "
        f"layers ({layers}): {cut}; {means}."
    )


def windows(sides: Sequence[ModelSide]) -> Comparison | None:
    notes = [n for n in (window_note(s) for s in sides) if n]
    return Comparison("windows", " ".join(notes), "compare-first-focus") if notes else None


def _by(kl: Spread) -> str:
    """How far a scaling moves a distribution, after "by": its KL, or less than float32 can
    tell apart from 0."""
    return f"less than {FLOOR_TEXT} nats (0 within float32)" if below_float(kl) else kl_words(kl)


def v_norm_note(sides: Sequence[ModelSide]) -> str:
    """When a model's post-attention norm undoes a mild scaling of V (``v_undone``) and
    another model's output moves under the same scaling, the contrast in one sentence."""
    found = {s.name: scaling_effects(s.interventions.scaling)
             for s in sides if s.interventions is not None}  # fmt: skip
    mild = {name: v[0] for name, e in found.items() if (v := mildest_first(e, "V"))}
    undone = [s for s in sides if s.name in mild and post_norm(s.manifest).present
              and v_undone(found[s.name])]  # fmt: skip
    moved = [s for s in sides if s.name in mild and s not in undone]
    if not undone or not moved:
        return ""
    eps = {mild[s.name].setting for s in [*undone, *moved]}
    if len(eps) != 1:
        return ""
    parts = [f"{s.name}'s by {_by(mild[s.name].kl)}" for s in [*moved, *undone]]
    parts[0] = parts[0].replace("'s by", "'s next-token distribution by", 1)
    names = join_and([s.name for s in undone])
    return (
        f" Scaling V by {eps.pop():g} moves {join_and(parts)}: {names} normalises the "
        "attention block's output before adding it (a post-attention norm), which undoes a "
        "scaling of V."
    )


def interventions(sides: Sequence[ModelSide]) -> Comparison | None:
    """The intervention layers and their depth match, and a post-attention norm undoing a
    scaling of V where one model has it (``v_norm_note``)."""
    text = depth_match(sides)
    return Comparison("interventions", text + v_norm_note(sides), "compare-kl") if text else None


def comparisons(sides: Sequence[ModelSide]) -> list[Comparison]:
    """Every comparing finding, in reading order."""
    made = [
        difference(sides),
        sink_onset(sides),
        sink_share(sides),
        windows(sides),
        interventions(sides),
        split_verdict(sides),
    ]
    return [c for c in made if c is not None]


# The comparison figure that shows a claim's measure, by the figure its own report cites
CLAIM_FIGURES = {"set-head-impact": "compare-head-impact", "set-sink-rate": "compare-sink-rate"}
BEAR_OUT = (SUPPORTED, PARTLY)  # verdicts that side with the claim


def _claims(side: ModelSide) -> dict[str, Claim]:
    """The claims one model's results test, by key (``claims_grid.tested_claims``)."""
    from attnreport.results.types import set_tables
    from attnreport.site.words.claims_grid import tested_claims

    first = [s.token_ids[0] if s.token_ids else -1 for s in side.manifest.sentences]
    bos = bool(side.manifest.settings.extra.get("bos_added", False))
    found = tested_claims(set_tables(side.set), side.interventions or None, first, bos)
    return {c.key: c for c in found}


def split_verdict(sides: Sequence[ModelSide]) -> Comparison | None:
    """The first claim that one model bears out (wholly or in part) and another contradicts:
    both verdicts, and the evidence of the model that contradicts it. None when the models
    do not part on any claim whose measure a comparison figure draws."""
    tested = [(side, _claims(side)) for side in sides]
    for key in dict.fromkeys(k for _, claims in tested for k in claims):
        held = [(s, c[key]) for s, c in tested if key in c and c[key].verdict.label in BEAR_OUT]
        broken = [(s, c[key]) for s, c in tested if key in c and c[key].verdict.label == CONTRADICTED]  # fmt: skip
        figure = CLAIM_FIGURES.get(held[0][1].figure) if held and broken else None
        if figure is None:
            continue
        verdicts = [f"{c.verdict.label} for {s.name} ({c.verdict.reason})" for s, c in [*held, *broken]]  # fmt: skip
        side, claim = broken[0]
        after = (
            ", whose update sizes are taken after its post-attention norm,"
            if claim.figure == "set-head-impact" and post_norm(side.manifest).sizes_after
            else ","
        )
        evidence = claim.evidence.removesuffix(".")
        return Comparison(
            "split-verdict",
            f"The models part on the claim \u201c{claim.hypothesis.removesuffix('.')}\u201d: "
            f"{join_and(verdicts)}. In {side.name}{after} {evidence[0].lower()}{evidence[1:]}.",
            figure,
        )
    return None


@dataclass(frozen=True)
class ClaimRow:
    """One claim and each model's verdict on it (``""`` where a model cannot test it)."""

    key: str
    hypothesis: str
    source: str
    verdicts: tuple[tuple[str, str], ...]  # (verdict, the number behind it) per model


def claim_rows(sides: Sequence[ModelSide]) -> list[ClaimRow]:
    """The claims-tested verdicts of every model (``site.claims_grid.tested_claims``)."""
    from attnreport.site.argument import SOURCE_NAMES

    tested = [_claims(side) for side in sides]
    keys = list(dict.fromkeys(k for claims in tested for k in claims))
    rows = []
    for key in keys:
        some = next(claims[key] for claims in tested if key in claims)
        verdicts = tuple(
            (c[key].verdict.label, c[key].verdict.reason) if key in c else ("", "not tested")
            for c in tested
        )
        rows.append(ClaimRow(key, some.hypothesis, SOURCE_NAMES.get(some.source, some.source), verdicts))  # fmt: skip
    return rows
