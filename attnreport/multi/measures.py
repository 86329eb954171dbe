"""The comparison's numbers: per-layer measures on relative depth, role counts (per model
and per layer) and the intervention KL of every model, as tidy column tables (their
names are the charts' fields). Pure: typed results in, new tables out; nothing here
imports torch.

Relative depth is ``layer / (L - 1)`` (0: the first layer, 1: the last), so models of
different depths share one axis. Every measure is set-level and per model: pooled over
each model's own tokens of the same sentences, never matched token by token (the
models split the sentences differently).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from attnreport.analyses import sinks
from attnreport.analyses.grid_kl import grid_kl
from attnreport.analyses.layer_choice import depth
from attnreport.results import Interventions, Manifest, SetResults

Columns = dict[str, list]
# statistic -> (what the curve shows, its axis title)
CURVES = {
    "first_focus": ("first-token focus", "share of queries whose top key is the first token"),
    "sink_rate": ("sink rate", "sink heads, % of the layer"),  # the caption names the measure
    "self_focus": ("self focus", "share of queries whose top key is the query itself"),
    "head_impact": ("head impact", "||u|| / ||x||, mean of the layer's heads"),
}


@dataclass(frozen=True)
class ModelSide:
    """One model of a comparison: its folder's slug, its short name and set-wide results."""

    slug: str
    name: str
    manifest: Manifest
    set: SetResults
    interventions: Interventions | None

    @property
    def n_layers(self) -> int:
        return self.manifest.model.n_layers


def short_name(manifest: Manifest) -> str:
    """``SmolLM2-135M-Instruct (Q4_1 GGUF, embedded)`` -> ``SmolLM2-135M-Instruct``."""
    return manifest.model.name.split(" (")[0] or manifest.model.name


def _head_means(layers: np.ndarray, values: np.ndarray) -> dict[int, float]:
    """Mean of ``values`` over the heads of each layer."""
    return {int(lay): float(values[layers == lay].mean()) for lay in np.unique(layers)}


def layer_values(side: ModelSide, statistic: str) -> dict[int, float]:
    """Per layer, one of ``CURVES``: a focus statistic averaged over the layer's heads
    (each head pooled over the set), the percentage of sink heads, or the mean of the
    heads' pooled update magnitude."""
    if statistic == "sink_rate":
        scores = sinks.pooled_scores(side.set.focus_by_sentence.arrays(), "first_prob")
        return dict(sinks.sink_rates(scores).by_layer)
    if statistic == "head_impact":
        impact = side.set.impact_pooled
        return _head_means(impact.layer, impact.magnitude)
    pooled = side.set.focus_pooled
    keep = pooled.statistic == statistic
    return _head_means(pooled.layer[keep], pooled.value[keep])


def curve_rows(sides: Sequence[ModelSide]) -> Columns:
    """model, statistic, layer, depth, value: one row per model, curve and layer."""
    rows: Columns = {"model": [], "statistic": [], "layer": [], "depth": [], "value": []}
    for statistic in CURVES:
        for side in sides:
            for layer, value in sorted(layer_values(side, statistic).items()):
                rows["model"].append(side.name)
                rows["statistic"].append(statistic)
                rows["layer"].append(layer)
                rows["depth"].append(depth(layer, side.n_layers))
                rows["value"].append(round(value, 6))
    return rows


def role_count_rows(sides: Sequence[ModelSide]) -> Columns:
    """model, role, heads, percent: how many heads of each model take each role (the
    head atlas's rule, ``charts.head_roles``); empty for results without head roles."""
    from attnreport.charts.figures.head_roles import NO_ROLE, ROLES, role_rows

    rows: Columns = {"model": [], "role": [], "heads": [], "percent": []}
    for side in sides:
        if side.set.head_roles is None:
            continue
        roles = role_rows(side.set)["role"]
        for role in [*ROLES, NO_ROLE]:
            count = sum(1 for r in roles if r == role)
            rows["model"].append(side.name)
            rows["role"].append(role)
            rows["heads"].append(count)
            rows["percent"].append(round(100.0 * count / len(roles), 6) if roles else 0.0)
    return rows


def role_layer_rows(sides: Sequence[ModelSide]) -> Columns:
    """model, role, layer, depth, heads, of, percent: per layer, how many of its ``of``
    heads take each role (the head atlas's rule, ``charts.head_roles``; no "no role"
    rows), as a percentage of the layer's heads; empty for results without head roles."""
    from attnreport.charts.figures.head_roles import ROLES, role_rows

    names = ("model", "role", "layer", "depth", "heads", "of", "percent")
    rows: Columns = {name: [] for name in names}
    for side in sides:
        if side.set.head_roles is None:
            continue
        table = role_rows(side.set)
        layers = sorted(set(table["layer"]))
        for role in ROLES:
            for layer in layers:
                mine = [r for r, lay in zip(table["role"], table["layer"], strict=True) if lay == layer]  # fmt: skip
                count = mine.count(role)
                values = (side.name, role, layer, depth(layer, side.n_layers), count, len(mine))
                for name, value in zip(names, values, strict=False):
                    rows[name].append(value)
                rows["percent"].append(round(100.0 * count / len(mine), 6))
    return rows


def _cell_label(target: str, setting: float | int, kind: str) -> str:
    if kind == "mean":
        return f"{target} mean"
    return f"{'V' if target == 'V' else 'Q or K'} x {setting:g}"  # Q or K: one intervention


def kl_rows(sides: Sequence[ModelSide]) -> Columns:
    """model, cell, kind, target, mean_kl (nats, by the report's one convention:
    the sentence-averaged KL, ``analyses.grid_kl``), low and high (its lowest and highest sentence),
    sentences, layer, depth: the next-token KL of every intervention of each model, at that
    model's intervention layer. Scaling Q or K is one intervention (s = eps q.k): results
    that ran both (before schema 9) give it one bar, their sentences' KL averaged."""
    names = ("model", "cell", "kind", "target", "mean_kl", "low", "high", "sentences", "layer",
             "depth")  # fmt: skip
    rows: Columns = {k: [] for k in names}
    for side in sides:
        iv = side.interventions
        if iv is None:
            continue
        groups: dict[str, list] = {}
        for kind, grid, sentence_of in (
            ("scaling", iv.scaling.cells, iv.scaling.sentence_of),
            ("mean", iv.mean.cells, lambda c: int(c.setting)),
        ):
            for cell in grid:
                label = _cell_label(cell.target, cell.setting, kind)
                groups.setdefault(label, []).append((kind, cell, sentence_of))
        for label, members in groups.items():
            kind, first, sentence_of = members[0]
            kl = grid_kl([c for _, c, _ in members], sentence_of)
            target = first.target if kind == "mean" or first.target == "V" else "QK"
            values = (side.name, label, kind, target, round(kl.mean, 6), round(kl.low, 6),
                      round(kl.high, 6), kl.n, iv.layer, depth(iv.layer, side.n_layers))  # fmt: skip
            for name, value in zip(names, values, strict=True):
                rows[name].append(value)
    return rows


def apart(gap: float) -> str:
    """A positive gap in relative depth in words, at two places: ``0.07 apart``, or ``less
    than 0.01 apart`` where two places would print 0.00."""
    return "less than 0.01 apart" if gap < 0.005 else f"{gap:.2f} apart"


def depth_match(sides: Sequence[ModelSide]) -> str:
    """The intervention layers and how closely their relative depths match, in words."""
    with_iv = [s for s in sides if s.interventions is not None]
    if not with_iv:
        return ""
    parts = [
        f"{s.name} at layer {s.interventions.layer} of {s.n_layers} (depth "
        f"{depth(s.interventions.layer, s.n_layers):.2f})"
        for s in with_iv
        if s.interventions is not None
    ]
    depths = [depth(s.interventions.layer, s.n_layers) for s in with_iv if s.interventions]
    gap = max(depths) - min(depths)
    steps = [1 / (s.n_layers - 1) for s in with_iv if s.n_layers > 1]
    match = (
        "the same relative depth"
        if gap < 1e-9
        else f"{apart(gap)} in relative depth"
        + (", the nearest the layers allow" if gap <= max(steps, default=0) / 2 + 1e-9 else "")
    )
    return "The interventions ran " + "; ".join(parts) + f": {match}."
