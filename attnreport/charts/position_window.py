"""How figure 10 (impact by position) draws an input longer than ``POSITION_WINDOW``
tokens: ``POSITION_WINDOW`` positions at a time, windows starting at multiples of it,
one data file per window (the first inline), a slider stepping through them.

Kept apart from ``block_impact`` (which needs Altair) because the alt text, written on
renders that read every figure from the cache, says which window the image shows.
"""

from __future__ import annotations

from attnreport.charts.figure import Columns

POSITION_WINDOW = 128  # the most token positions figure 10 draws at once
WINDOW_PARAM = "positions_from"  # the first position drawn (a slider; long inputs only)


def last_window(n_tokens: int) -> int:
    """First position of the last window of a windowed input."""
    return (n_tokens - 1) // POSITION_WINDOW * POSITION_WINDOW


def window_chunks(rows: Columns, n_tokens: int) -> dict[tuple[int], Columns]:
    """(first position,) -> the rows of the positions of that window, in their order
    (one pass over the rows: an 8192-token input has 64 windows)."""
    starts = range(0, last_window(n_tokens) + 1, POSITION_WINDOW)
    indices: dict[int, list[int]] = {start: [] for start in starts}
    for i, q in enumerate(rows["query"]):
        indices[q // POSITION_WINDOW * POSITION_WINDOW].append(i)
    return {
        (start,): {name: [values[i] for i in keep] for name, values in rows.items()}
        for start, keep in indices.items()
    }
