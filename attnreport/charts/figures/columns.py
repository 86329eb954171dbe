"""Column helpers: read results tables, round for display.

Display precision (what the pages carry; the results files keep 6 significant digits):
pre-softmax scores and score terms to 3 decimals, probabilities, magnitudes, cosines
and KL divergences to 4 decimals. Colour scales and tooltips need no more, and the
payload stays small.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from attnreport.charts.figure import Columns
from attnreport.results import SentenceResults
from attnreport.text import display_token

SCORE_DECIMALS = 3
VALUE_DECIMALS = 4


def rounded(values: Iterable[float], decimals: int = VALUE_DECIMALS) -> list[float]:
    """Python floats rounded to ``decimals`` places (correctly rounded, so JSON stays short):
    ``[round(float(v), decimals) for v in values]``, bit for bit, vectorised.

    ``rint(v * 10**d) / 10**d`` is that value whenever ``v * 10**d`` is not within float
    error of a half (the integer is then the exact decimal rounding, and the division is
    correctly rounded to the nearest double of that decimal, which is what ``round``
    returns); those few values, non-finite ones and ones too large for the float error
    bound are rounded by Python.
    """
    source = values if isinstance(values, np.ndarray) else list(values)
    array = np.asarray(source, dtype=np.float64)  # float(v) of each value, without the loop
    if not 0 <= decimals <= 15:
        return [round(v, decimals) for v in array.tolist()]
    scale = float(10**decimals)  # exact
    with np.errstate(invalid="ignore", over="ignore"):
        scaled = array * scale
        out = np.rint(scaled) / scale
        hard = ~np.isfinite(scaled) | (np.abs(scaled) >= 2.0**31)
        hard |= np.abs(scaled - np.floor(scaled) - 0.5) < 1e-6
    result = out.tolist()
    for index in np.flatnonzero(hard).tolist():
        result[index] = round(float(array[index]), decimals)
    return result


def select(columns: dict[str, np.ndarray], mask: np.ndarray) -> dict[str, np.ndarray]:
    """Rows of ``columns`` where ``mask`` is true."""
    return {k: v[mask] for k, v in columns.items()}


def sort_rows(columns: dict[str, np.ndarray], keys: Sequence[str]) -> dict[str, np.ndarray]:
    """Rows ordered by ``keys`` (first key outermost), stable."""
    order = np.lexsort([columns[k] for k in reversed(keys)])
    return {k: v[order] for k, v in columns.items()}


def sentence_tokens(sentence: SentenceResults) -> list[str]:
    """Display texts of a sentence's tokens, indexed by position."""
    tokens = sentence.tokens
    by_position = dict(zip(tokens.position.tolist(), tokens.token.tolist(), strict=True))
    return [display_token(str(by_position[i])) for i in range(len(by_position))]


def as_list(values: np.ndarray) -> list[Any]:
    """Numpy values as plain Python values (ints stay ints, bools become ints)."""
    if values.dtype == bool:
        return values.astype(int).tolist()
    return values.tolist()


def split(columns: Columns, by: Sequence[str]) -> dict[tuple[Any, ...], Columns]:
    """Rows grouped by the values of ``by``, in first-seen order; row order kept."""
    groups: dict[tuple[Any, ...], list[int]] = {}
    for index, key in enumerate(zip(*(columns[name] for name in by), strict=True)):
        groups.setdefault(key, []).append(index)
    return {
        key: {n: [col[i] for i in rows] for n, col in columns.items()}
        for key, rows in groups.items()
    }
