"""Before a long input starts: one line with its tokens and, once this run has measured a
rate, the time it will take at that rate.

The rate is measured, not guessed: tokens per second over the sentences this run has
finished (their wall time, as they were analysed one after the other here). An input
at least ``LONG_TOKENS`` long is announced just before it starts, with its tokens and
the time at that rate: a first estimate (a sentence's time per token changes with its
length: attention's share grows with it, a fixed share per sentence shrinks). The
progress display's row of layers then shows the time left at the input's own rate once
its first layer is done; with no sentence finished yet, the line says so. Past ``NOTE_TOKENS`` the line
adds what a shorter input or a GPU would change.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence

from attnreport.corpus.plain_progress import duration
from attnreport.sentences import Sentence

log = logging.getLogger(__name__)

LONG_TOKENS = 1024  # an input at least this long is announced before it starts
NOTE_TOKENS = 4096  # ... and past this long, with a note on what would be quicker


def long_line(sentence: Sentence, rate: float | None) -> str:
    """The line that announces ``sentence``; ``rate``: tokens per second measured on this
    run's finished sentences (None: none finished yet)."""
    n = len(sentence.token_ids)
    line = f"sentence {sentence.index + 1} has {n:,} tokens"
    if rate:
        line += (
            f": about {duration(n / rate)} at this run's rate so far ({rate:.3g} tokens/s; "
            "its own shows once its first layer is done)"
        )
    else:
        line += ": the time it takes is shown once its first layer is done"
    if n > NOTE_TOKENS:
        line += (
            f"; past {NOTE_TOKENS:,} tokens, a shorter input, or a GPU (--device cuda), is "
            "much quicker"
        )
    return line


class LongInputs:
    """Announces each long input of a run just before it starts (``next``), at the rate
    measured on the sentences finished before it (``finished``). ``clock``: seconds."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self.clock = clock
        self.tokens = 0
        self.seconds = 0.0
        self.since = clock()

    def rate(self) -> float | None:
        return self.tokens / self.seconds if self.tokens and self.seconds > 0 else None

    def next(self, sentence: Sentence | None) -> None:
        """``sentence`` starts now (None: nothing does)."""
        self.since = self.clock()
        if sentence is not None and len(sentence.token_ids) >= LONG_TOKENS:
            log.warning(long_line(sentence, self.rate()))

    def finished(self, sentence: Sentence) -> None:
        """``sentence`` (the one that started last) is done."""
        now = self.clock()
        self.tokens += len(sentence.token_ids)
        self.seconds += now - self.since
        self.since = now


def announce_all(pending: Sequence[Sentence]) -> None:
    """Every long input of ``pending`` at once, with no rate (workers run them together)."""
    for sentence in pending:
        if len(sentence.token_ids) >= LONG_TOKENS:
            log.warning(long_line(sentence, None).split(":")[0])
