"""What the comparison index says: findings that compare the models, and each model's
verdicts on the claims the report tests. Pure: typed results in, words out.

A finding states a claim and the number behind it, at a relative depth (``measures``):
a layer's own value, never one interpolated between layers, and never a maximum picked
from a list. A contrast between groups of layers needs ``MIN_UNITS`` layers on each side.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from attnreport.analyses import sinks
from attnreport.analyses.grid_kl import Spread
from attnreport.multi.measures import ModelSide, apart, depth, depth_match, layer_values
from attnreport.site.apparatus import post_norm
from attnreport.site.words.claims import Claim, ClaimInputs, tested_claims
from attnreport.site.words.effects import (
    FLOOR_TEXT,
    below_float,
    kl_words,
    mildest_first,
    scaling_effects,
)
from attnreport.site.words.findings import v_undone
from attnreport.site.words.readings import per_head
from attnreport.site.words.readings import sink_layers as layers_of_sinks
from attnreport.site.words.verdicts import CONTRADICTED, SUPPORTED, min_sentences
from attnreport.site.words.wording import index_set, join_and, lowercase_first

SAME = 1e-6  # the results keep 6 significant digits: closer depths read as identical
MIN_UNITS = min_sentences()  # layers each side of a contrast needs (as a 95% interval: 6)


@dataclass(frozen=True)
class Comparison:
    """One comparing finding: ``key`` (stable), its text, the figure that shows it (or
    ``anchor``: another part of the comparison page, the claims)."""

    key: str
    text: str
    figure: str
    anchor: str = ""

    @property
    def href(self) -> str:
        """Where its link points on the comparison page."""
        return "#" + (self.anchor or f"fig-{self.figure}")


def sink_layers(side: ModelSide) -> list[int]:
    """Layers where most heads make the first token the top key for most queries
    (``readings.sink_layers``, on the set's pooled first-token focus)."""
    return layers_of_sinks(per_head(side.set.focus_pooled, "first_focus"))


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
            parts.append(f"never in {side.name} (no sink layer)")
    text = "Where the sink forms: " + "; ".join(parts)
    if len(depths) == len(sides) > 1:
        gap = max(depths) - min(depths)
        text += (
            "; at the same relative depth" if gap < SAME else f"; {apart(gap)} in relative depth"
        )
    text += (
        ". A sink layer is one where more than half of the heads make the first token their "
        "top key for more than half of their queries."
    )
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
    return Comparison("sink-share", text + bos_note(sides), "compare-sink-rate")


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
    if min(len(local), len(full)) >= MIN_UNITS:
        means = (
            f"first-token focus is a median {np.median(local):.3g} on them against "
            f"{np.median(full):.3g} on its {len(full)} full-attention layers (layer medians)"
        )
    else:
        few = min(len(full), len(local))
        kind = "full-attention" if len(full) == few else "windowed"
        other = "windowed" if kind == "full-attention" else "full-attention"
        means = (
            f"its {few} {kind} {'layer is' if few == 1 else 'layers are'} too few to set "
            f"against the {max(len(full), len(local))} {other} ones (a contrast needs "
            f"{MIN_UNITS} layers on each side), and depth would confound such a contrast"
        )
    if longest <= size:
        cut = (
            f"no window cuts a sentence here (the longest has {longest} tokens, the window "
            f"{size}), so local and global layers see the same keys and differ only in "
            f"{_what_differs(side)}"
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


def _what_differs(side: ModelSide) -> str:
    """What sets a model's windowed layers apart from its full-attention ones when no
    window cuts a sentence: their weights, and their rotary base where the two kinds have
    their own (Gemma-3: 10,000 against 1,000,000)."""
    rope = side.manifest.model.rope
    local = next((p for k, p in rope.items() if "sliding" in k or "local" in k), None)
    full = next((p for k, p in rope.items() if "full" in k or "global" in k), None)
    if local and full and local.get("theta") != full.get("theta"):
        return (
            f"their weights and their RoPE base (θ = {local['theta']:,.0f} in the windowed "
            f"layers, {full['theta']:,.0f} in the others)"
        )
    return "their weights"


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
        sink_onset(sides),
        sink_share(sides),
        windows(sides),
        interventions(sides),
        split_verdict(sides),
    ]
    return [c for c in made if c is not None]


def _claims(side: ModelSide) -> dict[str, Claim]:
    """The claims one model's results test, by key (``claims.tested_claims``)."""
    inputs = ClaimInputs.of(side.set, side.interventions or None, side.manifest)
    return {c.key: c for c in tested_claims(inputs)}


def split_verdict(sides: Sequence[ModelSide]) -> Comparison | None:
    """The first claim that one model's data support and another's contradict, each by
    the rule and with its interval, and the evidence of the model that contradicts it.
    None when the models do not part on any claim."""
    tested = [(side, _claims(side)) for side in sides]
    for key in dict.fromkeys(k for _, claims in tested for k in claims):
        held = [(s, c[key]) for s, c in tested if key in c and c[key].verdict.label == SUPPORTED]
        broken = [(s, c[key]) for s, c in tested if key in c and c[key].verdict.label == CONTRADICTED]  # fmt: skip
        if not held or not broken:
            continue
        verdicts = [f"{c.verdict.label} for {s.name} ({c.numbers})" for s, c in [*held, *broken]]
        side, claim = broken[0]
        evidence = claim.evidence.removesuffix(".")
        return Comparison(
            "split-verdict",
            f"The models part on the claim \u201c{claim.hypothesis.removesuffix('.')}\u201d: "
            f"{join_and(verdicts)}. In {side.name}, {lowercase_first(evidence)}.",
            "",
            anchor="claims",
        )
    return None


@dataclass(frozen=True)
class ClaimRow:
    """One claim and each model's verdict on it (``""`` where a model cannot test it)."""

    key: str
    hypothesis: str
    source: str
    verdicts: tuple[tuple[str, str], ...]  # (verdict, its reason and numbers) per model


def claim_rows(sides: Sequence[ModelSide]) -> list[ClaimRow]:
    """The claims-tested verdicts of every model (``claims.tested_claims``)."""
    from attnreport.site.argument import SOURCE_NAMES

    tested = [_claims(side) for side in sides]
    keys = list(dict.fromkeys(k for claims in tested for k in claims))
    rows = []
    for key in keys:
        some = next(claims[key] for claims in tested if key in claims)
        verdicts = tuple(
            (
                c[key].verdict.label,
                "; ".join(x for x in (c[key].verdict.reason, c[key].numbers) if x),
            )
            if key in c
            else ("", "not tested")
            for c in tested
        )
        rows.append(ClaimRow(key, some.hypothesis, SOURCE_NAMES.get(some.source, some.source), verdicts))  # fmt: skip
    return rows
