"""How the figures drawn against the token position (2, 3 and 10) show an input longer
than ``POSITION_WINDOW`` tokens: ``POSITION_WINDOW`` positions at a time, windows
starting at multiples of it, a slider stepping through them, the title naming the
positions shown. Figure 10 keeps one data file per window (the first inline); figures 2
and 3 filter their per-layer data files by the window.

A bar or a line point per position stays readable at about a hundred positions; 512
would make a chart several screens wide, with every one of its axis labels drawn.

Kept apart from the figure modules (which need Altair) because the alt text, written on
renders that read every figure from the cache, says which window the image shows.
"""

from __future__ import annotations

from attnreport.charts.figure import Columns

POSITION_WINDOW = 128  # the most token positions figure 10 draws at once
WINDOW_PARAM = "positions_from"  # the first position drawn (a slider; long inputs only)


def is_windowed(n_tokens: int) -> bool:
    return n_tokens > POSITION_WINDOW


def shown_positions(n_tokens: int) -> int:
    """How many positions the chart draws at once."""
    return min(n_tokens, POSITION_WINDOW)


def window_filter() -> str:
    """Vega expression: the row's position (``query``) is in the slider's window."""
    return f"datum.query >= {WINDOW_PARAM} && datum.query < {WINDOW_PARAM} + {POSITION_WINDOW}"


def window_title_part(n_tokens: int) -> str:
    """Vega expression for the title: "positions 128-255 of 512"."""
    last = f"min({WINDOW_PARAM} + {POSITION_WINDOW}, {n_tokens}) - 1"
    return f"'positions ' + {WINDOW_PARAM} + '-' + ({last}) + ' of {n_tokens}'"


def window_caption(n_tokens: int) -> str:
    """The caption's sentence about the window ("" for an input that is not windowed)."""
    if not is_windowed(n_tokens):
        return ""
    return (
        f" This input has {n_tokens} tokens, so the chart draws {POSITION_WINDOW} "
        "positions at a time: the slider 'positions from' steps through them, and the "
        "title names the positions shown."
    )


def window_alt_note(n_tokens: int) -> str:
    """The alt text's sentence about the window the image shows ("" when not windowed)."""
    if not is_windowed(n_tokens):
        return ""
    return f" It shows positions 0-{POSITION_WINDOW - 1} of {n_tokens}."


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
