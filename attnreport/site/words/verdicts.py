"""The rule that turns a claim's test into a verdict, stated once: in the Methods, on the
claims, and here, where the code applies it.

A claim is a declared test (``claims``): inside its source's scope it measures one signed
*effect* per sentence, a comparison made within that sentence (within its layers and
heads), where 0 is no effect and a positive effect is what the claim says. The verdict
reads the median of those per-sentence effects and its distribution-free 95% interval
(the sign-test interval: the order statistics x_(k) and x_(n+1-k) of the n effects, k the
largest with 2 P(Bin(n, 1/2) < k) <= 5%). The rule, in order:

1. inconclusive when there are too few sentences for that interval (fewer than
   ``min_sentences()`` = 6) or the test could not be made (the reason says why);
2. supported when the whole interval lies above 0;
3. contradicted when the whole interval lies below 0;
4. inconclusive otherwise: the interval includes no effect.

Nothing else (a share of heads that break it, a mean carried by a few large heads) moves
a verdict. A property that holds by construction is not a claim: it is a *check*
(passed or failed), never support.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np

from attnreport.site.words.wording import number

SUPPORTED = "supported"
CONTRADICTED = "contradicted"
INCONCLUSIVE = "inconclusive"
VERDICTS = (SUPPORTED, CONTRADICTED, INCONCLUSIVE)
PASSED, FAILED = "passed", "failed"  # a check's outcome
LEVEL = 0.95  # the interval's coverage


def _tail(n: int, k: int) -> float:
    """P(Bin(n, 1/2) < k): the chance that fewer than ``k`` of ``n`` fair signs are +."""
    return sum(math.comb(n, i) for i in range(k)) / 2**n


@cache
def _rank(n: int, level: float = LEVEL) -> int:
    """The order statistic k of the sign-test interval [x_(k), x_(n+1-k)] of ``n`` values
    (coverage 1 - 2 P(Bin(n, 1/2) < k) >= ``level``); 0 when ``n`` is too small for any."""
    k = 0
    while k + 1 <= (n + 1) // 2 and 2 * _tail(n, k + 1) <= 1 - level:
        k += 1
    return k


@cache
def min_sentences(level: float = LEVEL) -> int:
    """The fewest values that have a sign-test interval at ``level`` (6 at 95%)."""
    n = 1
    while _rank(n, level) == 0:
        n += 1
    return n


def median_interval(values: Sequence[float], level: float = LEVEL) -> tuple[float, float] | None:
    """The distribution-free interval of the median of ``values``: the order statistics
    x_(k), x_(n+1-k) (``_rank``); it covers the median with probability at least ``level``
    whatever the values' distribution, if they are independent. None for too few values."""
    v = np.sort(np.asarray(values, dtype=float))
    k = _rank(len(v), level)
    if k == 0:
        return None
    return float(v[k - 1]), float(v[len(v) - k])


RULE = (
    "A claim is tested inside its source's scope: each sentence gives one effect, a "
    "comparison made within that sentence (0: no effect; positive: as the claim says). The "
    "verdict reads the median effect over the sentences and its 95% sign-test interval "
    "(the order statistics x_(k) and x_(n+1−k), k the largest with 2·P(Bin(n, ½) < k) ≤ 5%; "
    f"it needs at least {min_sentences()} sentences): supported when the whole interval "
    "lies on the claim's side of no effect, contradicted when it lies wholly on the other "
    "side, inconclusive otherwise (the reason is given). Heads or layers that break a "
    "claim are named but do not move its verdict. A property that holds by construction "
    "is a check (passed or failed), never support."
)


@dataclass(frozen=True)
class Verdict:
    """A verdict and its reason in words; ``median`` and ``interval`` are the effect's
    (in the claim's own units, signed as the claim), ``n`` the sentences behind them."""

    label: str
    reason: str
    median: float | None = None
    interval: tuple[float, float] | None = None
    n: int = 0


def untested(reason: str) -> Verdict:
    """The verdict of a claim that could not be tested here, and why."""
    return Verdict(INCONCLUSIVE, reason)


def verdict(effects: Sequence[float]) -> Verdict:
    """The verdict of per-sentence ``effects`` (positive: as claimed) by ``RULE``."""
    values = [float(e) for e in effects if math.isfinite(float(e))]
    n = len(values)
    if n == 0:
        return untested("no sentence has what the test compares")
    median = float(np.median(values))
    interval = median_interval(values)
    if interval is None:
        why = f"too few sentences: a 95% interval needs {min_sentences()}, {n} here"
        return Verdict(INCONCLUSIVE, why, median, None, n)
    low, high = interval
    if low > 0:
        return Verdict(SUPPORTED, "the 95% interval lies on the claim's side", median, interval, n)
    if high < 0:
        why = "the 95% interval lies on the other side"
        return Verdict(CONTRADICTED, why, median, interval, n)
    return Verdict(INCONCLUSIVE, "the 95% interval includes no effect", median, interval, n)


def interval_words(v: Verdict, shown: Callable[[float], float] = float, digits: int = 2) -> str:
    """``median 0.42 (95% interval 0.31 to 0.55, 200 sentences)``: the verdict's numbers in
    the claim's units (``shown`` maps an effect to them), written with ``digits``
    significant digits (trailing zeros kept: ``0.20 to 0.21``), or up to two more where the
    interval's ends would otherwise read alike (``0.213 to 0.216``, not ``0.21 to 0.21``);
    ends alike even then say so (``its 95% interval rounds to 0.21 too``); "" untested."""
    if v.median is None:
        return ""
    sentences = f"{v.n} sentence" + ("" if v.n == 1 else "s")
    median = shown(v.median)
    if v.interval is None:
        return f"median {number(median, digits)} over {sentences}, too few for an interval"
    low, high = sorted(shown(e) for e in v.interval)
    for places in range(digits, digits + 3):
        written = [number(x, places, zeros=True) for x in (median, low, high)]
        if written[1] != written[2]:
            return f"median {written[0]} (95% interval {written[1]} to {written[2]}, {sentences})"  # fmt: skip
    alike = "is" if low == high else "rounds to"
    written = [number(x, digits, zeros=True) for x in (median, low)]
    return f"median {written[0]} (its 95% interval {alike} {written[1]} too, {sentences})"
