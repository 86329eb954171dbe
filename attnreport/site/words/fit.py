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
- a number over the set is the median of its per-sentence values with its 95% sign-test
  interval (``median_words``; the range with too few sentences for one);
- a set of heads is named with the structure behind it (``structure_words``: a KV group).

All functions are pure and return plain text.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np

from attnreport.site.words import wording
from attnreport.site.words.verdicts import median_interval

NAME_HEADS = 8  # sets of at most this many heads are named one by one
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


def kv_groups(heads: Iterable[tuple[int, int]], n_heads: int, n_kv_heads: int) -> list[str]:
    """The whole KV groups (query heads that share one key and value head) that ``heads``
    hold, in words: ``layer 24, heads 6-8 (one KV group)``; empty without grouped-query
    attention or when no group is whole."""
    if not 0 < n_kv_heads < n_heads or n_heads % n_kv_heads:
        return []
    size = n_heads // n_kv_heads
    held = set((int(a), int(b)) for a, b in heads)
    out = []
    for layer, group in sorted({(a, b // size) for a, b in held}):
        members = [(layer, group * size + i) for i in range(size)]
        if all(m in held for m in members):
            out.append(f"{wording.index_set([h for _, h in members], 'head')} of layer {layer}")
    return out


def structure_words(heads: Iterable[tuple[int, int]], n_heads: int = 0, n_kv_heads: int = 0) -> str:
    """A set of heads named with the structure behind it: whole KV groups as such (``heads
    6-8 of layer 24 (one KV group: they share their keys and values)``), else the heads
    (``heads_words``) and, for more than ``NAME_HEADS`` over several layers, their band."""
    items = sorted(set((int(a), int(b)) for a, b in heads))
    groups = kv_groups(items, n_heads, n_kv_heads)
    if groups and len(groups) * (n_heads // n_kv_heads) == len(items):
        what = (
            "one KV group: they share their keys and values"
            if len(groups) == 1
            else f"{len(groups)} KV groups, each sharing its keys and values"
        )
        return f"{wording.join_and(groups)} ({what})"
    text = heads_words(items)
    layers = sorted({a for a, _ in items})
    if len(items) > NAME_HEADS and len(layers) > 1 and " in layer" not in text:
        return f"{text} (in {wording.index_set(layers, 'layer')})"
    return text


def median_words(values: Sequence[float], fmt: Callable[[float], str] = wording.percent) -> str:
    """A number over the sentences as the report states it: the median of the per-sentence
    values with its 95% sign-test interval (``verdicts.median_interval``), ``a median 93%
    (95% interval 91% to 95%, 200 sentences)``, or ``(its 95% interval rounds to 93% too, ...)``
    where its ends are written alike; with too few sentences for an interval, the range; one:
    ``93% (one sentence)``."""
    v = sorted(float(x) for x in values)
    if len(v) == 1:
        return f"{fmt(v[0])} (one sentence)"
    median = float(np.median(v))
    interval = median_interval(v)
    if interval is None:
        return (
            f"a median {fmt(median)} (range {fmt(v[0])} to {fmt(v[-1])} over {len(v)} "
            "sentences, too few for a 95% interval)"
        )
    low, high = interval
    if fmt(low) == fmt(high):  # "87% to 87%" would read as an interval of no width
        return f"a median {fmt(median)} (its 95% interval rounds to {fmt(low)} too, {len(v)} sentences)"  # fmt: skip
    return f"a median {fmt(median)} (95% interval {fmt(low)} to {fmt(high)}, {len(v)} sentences)"
