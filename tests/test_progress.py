"""Warnings logged while the progress is drawn land above it, whole (never overdrawn),
and the logger's own handlers come back afterwards."""

from __future__ import annotations

import io
import logging

from rich.console import Console

from attnreport.corpus.progress import RichProgress

WARNING = (
    "figure bias-vs-position: no static image, its default view has 90000 rows / "
    "5000000 bytes (bound 50000 rows / 4000000 bytes)"
)


def test_a_warning_prints_above_the_progress_whole():
    logger = logging.getLogger("attnreport")
    before = list(logger.handlers)
    drawn = io.StringIO()
    progress = RichProgress()
    progress.progress.live.console = Console(file=drawn, force_terminal=True, width=60)
    with progress:
        progress("capture", 0, 2)
        logging.getLogger("attnreport.charts.images").warning(WARNING)
        progress("capture", 1, 2)
    assert logger.handlers == before
    text = drawn.getvalue()
    assert f"warning: {WARNING}" in text  # one piece, longer than the 60-column terminal
    assert text.index("warning:") < text.rindex("Capturing sentences")  # progress drawn after
