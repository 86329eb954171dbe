"""Column helpers: read results tables, round for display.

Display precision (what the pages carry; the results files keep 6 significant digits,
but the attention scores at the 3 decimals shown, ``SCORE_PLACES``):
pre-softmax scores and score terms to 3 decimals, probabilities, magnitudes, cosines
and KL divergences to 4 decimals. Colour scales and tooltips need no more, and the
payload stays small.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from attnreport.charts.figure import Columns
from attnreport.results import SentenceResults, rounding
from attnreport.results.rounding import SCORE_PLACES
from attnreport.text import display_token

SCORE_DECIMALS = SCORE_PLACES  # the places the results keep the attention scores at
VALUE_DECIMALS = 4


def rounded(values: Iterable[float], decimals: int = VALUE_DECIMALS) -> list[float]:
    """``results.rounding.rounded`` for display: ``VALUE_DECIMALS`` places unless told."""
    return rounding.rounded(values, decimals)


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
