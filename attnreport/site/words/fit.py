"""Words that fit the numbers: the rules that keep the report from selling noise.

``wording`` says how a number is written; this module says what a number may be called:

- a cosine is a direction only past ``cosine_threshold(d) = 3 / sqrt(d)`` for vectors of
  ``d`` dimensions (two random directions in ``d`` dimensions have a cosine of standard
  deviation about ``1 / sqrt(d)``); inside it the vectors are "about orthogonal";
- a difference of two probabilities is never more than 100 percentage points; a margin
  that is nearly all of the probability is said in words;
- a curve over layers is described by its runs (zero, near zero) and its peaks, not by
  its two ends;
- a set of at most ``NAME_HEADS`` heads is named head by head (``layer 5, head 2``);
- a number over the set carries its spread across sentences: the range, and from
  ``BOOTSTRAP_FROM`` sentences on a bootstrap interval of the mean.

All functions are pure and return plain text.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np

from attnreport.site.words import wording

NAME_HEADS = 8  # sets of at most this many heads are named one by one
BOOTSTRAP_FROM = 5  # sentences needed for a bootstrap interval (fewer: the range only)
BOOTSTRAP_DRAWS = 2000
BOOTSTRAP_SEED = 0  # fixed: the same results give the same words
ZERO = 0.005  # a share below this reads "zero" in a curve (it rounds to 0%)
NEAR_ZERO = 0.05  # and below this "near zero"
MOST_PEAKS = 3  # a curve names at most this many peaks


def cosine_threshold(dim: int) -> float:
    """The smallest |cosine| the report calls a direction in ``dim`` dimensions: 3/sqrt(d)."""
    if dim < 1:
        raise ValueError(f"a dimension must be positive, not {dim}")
    return min(1.0, 3.0 / math.sqrt(dim))


def cosine_words(cosine: float, dim: int, what: str = "the hidden state") -> str:
    """``points along the hidden state (cosine 0.31)``, ``points against ...``, or
    ``is about orthogonal to the hidden state (cosine -0.043, within ±0.125 = 3/√576)``."""
    c, limit = float(cosine), cosine_threshold(dim)
    shown = f"cosine {wording.number(c, 2)}"
    if abs(c) <= limit:
        return (
            f"is about orthogonal to {what} ({shown}, within ±{wording.number(limit)} = 3/√{dim})"
        )
    return f"points {'along' if c > 0 else 'against'} {what} ({shown})"


def margin_words(difference: float) -> str:
    """The lead of the top key over the runner-up, a difference of two probabilities.

    Raises ValueError past 1 (a probability margin cannot exceed 100 percentage points);
    at or above 0.995 the runner-up gets almost nothing and the words say so.
    """
    d = float(difference)
    if not -1 - 1e-6 <= d <= 1 + 1e-6:
        raise ValueError(f"a difference of probabilities must lie in [-1, 1], not {d}")
    if d >= 0.995:
        return "almost all of the probability, the runner-up next to none"
    text = wording.percent(abs(d)).replace("%", "")
    unit = "point" if text == "1" else "points"
    return f"{text} percentage {unit} more probability than the runner-up"


def lead_words(difference: float) -> str:
    """A head's lead of its top key over the runner-up in a short phrase (alt text, axis
    summaries): ``a lead of 42 percentage points``; at or above 0.995, where the runner-up
    gets almost nothing, ``a lead of almost all of the probability`` (never "100 points")."""
    d = float(difference)
    if d >= 0.995:
        return "a lead of almost all of the probability"
    return f"a lead of {wording.points(d)}"


def _level(value: float) -> str:
    return "zero" if value < ZERO else "near zero" if value < NEAR_ZERO else "high"


def _runs(layers: Sequence[int], levels: Sequence[str]) -> list[tuple[str, list[int]]]:
    out: list[tuple[str, list[int]]] = []
    for layer, level in zip(layers, levels, strict=True):
        if out and out[-1][0] == level:
            out[-1][1].append(layer)
        else:
            out.append((level, [layer]))
    return out


def curve_words(values: Mapping[int, float], fmt: Callable[[float], str] = wording.percent) -> str:
    """A curve over layers (shares in [0, 1]) by its runs and peaks.

    ``zero in layers 3-9, near zero in 12-24; peaks of 35% in layer 11 and 32% in layer 0``.
    A peak is the highest layer of each run that is neither zero nor near zero; the
    ``MOST_PEAKS`` highest are named, and the lowest layer when no layer is near zero.
    Empty: "".
    """
    layers = sorted(values)
    if not layers:
        return ""
    runs = _runs(layers, [_level(values[k]) for k in layers])
    parts = []
    for level in ("zero", "near zero"):
        spans = [layer for lv, run in runs if lv == level for layer in run]
        if spans:
            where = wording.index_set(spans, "layer", len(layers))
            bound = f" (under {wording.percent(NEAR_ZERO)})" if level == "near zero" else ""
            parts.append(f"{level}{bound} in {where}")
    peaks = [max(run, key=lambda k: (values[k], -k)) for lv, run in runs if lv == "high"]
    peaks = sorted(peaks, key=lambda k: (-values[k], k))[:MOST_PEAKS]
    if peaks:
        said = wording.join_and(f"{fmt(values[k])} in layer {k}" for k in peaks)
        parts.append(f"{'a peak' if len(peaks) == 1 else 'peaks'} of {said}")
    low = min(layers, key=lambda k: (values[k], k))
    if _level(values[low]) == "high" and low not in peaks:
        parts.append(f"lowest {fmt(values[low])} in layer {low}")
    return "; ".join(parts)


def heads_words(heads: Iterable[tuple[int, int]]) -> str:
    """At most ``NAME_HEADS`` heads named one by one (``layer 5, head 2; layer 6, head 1
    and layer 7, head 0``: semicolons, as each name holds a comma); more: grouped
    (``wording.head_set``)."""
    items = sorted(set((int(a), int(b)) for a, b in heads))
    if not items:
        return "no heads"
    if len(items) <= NAME_HEADS:
        names = [wording.head_name(*lh) for lh in items]
        return names[0] if len(names) == 1 else "; ".join(names[:-1]) + " and " + names[-1]
    return wording.head_set(items)


def bootstrap_interval(values: Sequence[float], level: float = 0.95) -> tuple[float, float]:
    """A percentile bootstrap interval of the mean of ``values`` (seeded, so repeatable)."""
    v = np.asarray(values, dtype=float)
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    means = v[rng.integers(0, len(v), size=(BOOTSTRAP_DRAWS, len(v)))].mean(axis=1)
    tail = (1 - level) / 2
    return float(np.quantile(means, tail)), float(np.quantile(means, 1 - tail))


def spread_words(values: Sequence[float], fmt: Callable[[float], str] = wording.percent) -> str:
    """The spread of one number across sentences: ``range 20%-48% over 6 sentences; 95%
    bootstrap interval of the mean 28%-41%`` (the interval from ``BOOTSTRAP_FROM`` on).
    One value: ``one sentence, no spread``."""
    v = [float(x) for x in values]
    if len(v) < 2:
        return "one sentence, no spread"
    text = f"range {fmt(min(v))} to {fmt(max(v))} over {len(v)} sentences"
    if len(v) >= BOOTSTRAP_FROM:
        lo, hi = bootstrap_interval(v)
        text += f"; 95% bootstrap interval of the mean {fmt(lo)} to {fmt(hi)}"
    return text
