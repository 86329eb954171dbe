"""The seed figures' properties that hold by construction, checked on this run (passed or
failed, never support for a claim):

- scaling Q or K by ε makes every score ε q·k, so as ε → 0 attention turns uniform over
  the keys each query sees;
- scaling V changes what a head writes, never its own layer's weights (they are computed
  before V is used);
- replacing K by its mean *after* the rotary rotation gives every key the same vector, so
  attention is uniform (the mean taken before the rotation is the seed-003 claim).

The two uniform ones hold only where a score is q·k alone: an ALiBi bias or a learned
sink logit is not scaled or averaged, so for such a model they are not checked.

A failed check points at the capture or the intervention, not at the model.
"""

from __future__ import annotations

from attnreport.site.words import effects, fit
from attnreport.site.words.claims import Check, ClaimInputs, check
from attnreport.site.words.claims.maps import (
    UNCHANGED_TOL,
    UNIFORM_TOL,
    cell_changes,
    cell_gaps,
    head_max,
    smallest_cells,
)
from attnreport.site.words.wording import join_and, number, quantity

# The grids keep attention weights at 6 significant digits (as the results keep every
# float): a gap to uniform below 1e-6 is that rounding, or float32's, and reads as 0.
GAP_FLOOR = 1e-6
GAP_FLOOR_TEXT = "1e-6"


def gap_words(gap: float) -> str:
    """A gap to uniform attention as a reader may take it: ``0.012``, or for a gap under
    ``GAP_FLOOR`` "below 1e-6, 0 at the precision the weights are kept at"."""
    if gap < GAP_FLOOR:
        return f"below {GAP_FLOOR_TEXT}, 0 at the precision the weights are kept at"
    return number(gap, 2)


def _over(n: int) -> str:
    """`` (on 8 sentences)`` when the grid scaled several, else "": the bound given holds
    on every one."""
    return f" (on {n} sentences)" if n > 1 else ""


@check(order=10)
def qk_scaling_uniform(inputs: ClaimInputs) -> Check | None:
    """At the smallest ε, every head of the intervention layer within ``UNIFORM_TOL`` of
    uniform on every sentence scaled, Q and K scaled alike (one target, "QK", in schema 9)."""
    iv = inputs.interventions
    if iv is None or not iv.scaling.cells or not inputs.scores_only_qk:
        return None
    eps, cells = smallest_cells(iv.scaling, ("Q", "K", "QK"))
    if not cells:
        return None
    targets = sorted({c.target for c in cells}, key=lambda t: effects.ORDER.get(t, 3))
    gaps = {t: head_max([cell_gaps(c) for c in cells if c.target == t]) for t in targets}
    n = len({iv.scaling.sentence_of(c) for c in cells})
    broken = sorted(
        {(iv.layer, h) for g in gaps.values() for h, v in enumerate(g) if v > UNIFORM_TOL}
    )
    largest = {t: gap_words(max(gaps[t], default=0.0)) for t in targets}
    kl = {c.target: effects.mean_kl(c) for c in cells}  # Q and K apart: one input (schema < 9)
    same = (
        f"; Q and K give the same KL, {quantity(kl['Q'], 'nat')}"
        if len(kl) == 2 and len(set(kl.values())) == 1
        else ""
    )
    gap = "the largest gap between a head's weights and uniform over the keys it sees is"
    if len(targets) == 1:  # schema 9 on: Q and K scaled alike, one target
        what = effects.target_words(targets[0])
        gap += f" {largest[targets[0]]}"
    else:
        what = join_and([effects.target_words(t) for t in targets], "or")
        gap += " " + "; ".join(f"{largest[t]} for {effects.target_words(t)}" for t in targets)
    evidence = (
        f"{what} scaled by {eps:g} in layer {iv.layer}{_over(n)}: {gap} (the check allows "
        f"{UNIFORM_TOL:g}){same}."
    )
    if broken:
        evidence += f" {fit.heads_words(broken)} stay further from uniform."
    return Check("qk-uniform", "Scaling Q or K by ε → 0 makes attention uniform over the keys "
                 "each query sees (every score becomes ε q·k).", "seeds", not broken, evidence,
                 "scaling-grid", iv.scaling.sentence)  # fmt: skip


@check(order=20)
def v_scaling_own_layer(inputs: ClaimInputs) -> Check | None:
    """V scaled by the smallest ε leaves its own layer's weights within ``UNCHANGED_TOL`` on
    every sentence scaled; the evidence also says what it does change (the next layer, the
    next token)."""
    iv = inputs.interventions
    if iv is None or not iv.scaling.baseline:
        return None
    eps, cells = smallest_cells(iv.scaling, ("V",))
    if not cells:
        return None
    base = iv.scaling.baseline  # the drawn input's: older cells without ``moved`` are its
    own = head_max([cell_changes(c, base, "same") for c in cells])
    n = len({iv.scaling.sentence_of(c) for c in cells})
    broken = [(iv.layer, h) for h, v in enumerate(own) if v > UNCHANGED_TOL]
    moved = max(own, default=0.0)
    evidence = f"V scaled by {eps:g} in layer {iv.layer}{_over(n)}: the layer's own weights " + (
        "do not move at all" if moved == 0 else f"move at most {number(moved, 2)}"
    )
    after = iv.observed_layers.get("next", iv.layer + 1)
    if after > iv.layer:
        nxt = head_max([cell_changes(c, base, "next") for c in cells])
        evidence += f"; layer {after}'s move up to {number(max(nxt, default=0.0), 2)}"
    spread = next(  # its KL over every input scaled, as the findings give it
        e.kl for e in effects.scaling_effects(iv.scaling) if (e.target, e.setting) == ("V", eps)
    )
    evidence += f"; the next-token distribution's KL is {effects.kl_words(spread)}."
    if broken:
        evidence += f" {fit.heads_words(broken)} change their own weights."
    return Check("v-own-layer", "Scaling V leaves its own layer's attention weights "
                 "unchanged (they are computed before V is used).", "seeds", not broken,
                 evidence, "scaling-grid", iv.scaling.sentence)  # fmt: skip


@check(order=30)
def mean_k_after_rotation_uniform(inputs: ClaimInputs) -> Check | None:
    """K replaced by its mean after the rotation: every head within ``UNIFORM_TOL`` of uniform."""
    iv = inputs.interventions
    cells = [c for c in iv.mean.cells if c.target == "K"] if iv is not None else []
    if iv is None or not cells or not inputs.scores_only_qk:
        return None
    gaps = {int(c.setting): max(cell_gaps(c), default=0.0) for c in cells}
    broken = sorted(s for s, g in gaps.items() if g > UNIFORM_TOL)
    evidence = (
        f"Mean taken after the rotary rotation (what the attention function receives) in "
        f"layer {iv.layer}: the largest gap to uniform attention over "
        f"{len(gaps)} sentences is {gap_words(max(gaps.values()))}."
    )
    if broken:
        evidence += f" Sentences {', '.join(map(str, broken))} stay further from uniform."
    return Check("mean-k-uniform", "Replacing K by its mean over the positions after the "
                 "rotary rotation makes attention uniform (every key is the same vector).",
                 "seed003", not broken, evidence, "mean-grid", min(gaps))  # fmt: skip
