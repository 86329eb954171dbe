"""Before a long input starts: one line with its tokens and the time it will take, at a
rate measured on this machine, this model and these settings, not guessed.

The study of a sentence costs a part that grows with its length (the model's layers) and
a part that grows with its square (every query against every key, in every head). Two
prefixes of the first long input (``PROBES`` tokens) are analysed and timed, exactly as
any sentence is, and ``seconds = a n + b n^2`` is fitted through the two; each long input
is then announced with that estimate. The probes cost a few percent of one long input.
Past ``NOTE_TOKENS`` the line adds that the square dominates.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from attnreport.config import Settings
from attnreport.corpus.plain_progress import duration
from attnreport.corpus.work import analyze_one
from attnreport.sentences import Sentence
from attnreport.session import Session

log = logging.getLogger(__name__)

LONG_TOKENS = 1024  # an input at least this long is announced before it starts
NOTE_TOKENS = 4096  # ... and past this long, with a note on how its time grows
PROBES = (256, 512)  # the prefixes timed for the estimate, in tokens


@dataclass(frozen=True)
class Cost:
    """Seconds to analyse ``n`` tokens: ``linear * n + square * n ** 2`` (both >= 0),
    fitted through the measured ``probes`` ((tokens, seconds), (tokens, seconds))."""

    linear: float
    square: float
    probes: tuple[tuple[int, float], tuple[int, float]]

    def __call__(self, n: int) -> float:
        return self.linear * n + self.square * n * n


def fit_cost(first: tuple[int, float], second: tuple[int, float]) -> Cost:
    """The ``Cost`` through two measured (tokens, seconds) points; where the two do not
    grow like a n + b n^2 with a, b >= 0 (noise), the nearest such curve through the
    longer one: all linear, or all square."""
    (n1, t1), (n2, t2) = sorted([first, second])
    square = (t2 / n2 - t1 / n1) / (n2 - n1)
    linear = t1 / n1 - square * n1
    if square < 0:
        linear, square = t2 / n2, 0.0
    elif linear < 0:
        linear, square = 0.0, t2 / n2**2
    return Cost(linear, square, ((n1, t1), (n2, t2)))


def measure_cost(
    session: Session,
    settings: Settings,
    sentence: Sentence,
    analyze: Callable[[Session, Sentence, Settings], object] = analyze_one,
) -> Cost:
    """Time ``analyze`` of the ``PROBES`` prefixes of ``sentence``; their ``Cost``."""
    points = []
    for n in PROBES:
        prefix = replace(sentence, token_ids=sentence.token_ids[:n], tokens=sentence.tokens[:n])
        start = time.perf_counter()
        analyze(session, prefix, settings)
        points.append((n, time.perf_counter() - start))
    return fit_cost(points[0], points[1])


def long_line(sentence: Sentence, cost: Cost | None) -> str:
    """The line that announces ``sentence`` (``cost``: None where none was measured)."""
    n = len(sentence.token_ids)
    line = f"sentence {sentence.index + 1} has {n:,} tokens"
    if cost is not None:
        (n1, t1), (n2, t2) = cost.probes
        line += (
            f": about {duration(cost(n))} to analyse, at the rate measured on its first "
            f"{n1} and {n2} tokens ({t1:.1f} s and {t2:.1f} s)"
        )
    if n > NOTE_TOKENS:
        line += (
            f"; past {NOTE_TOKENS:,} tokens most of that time is attention, which grows with "
            "the square of the length (a shorter input, or a GPU with --device cuda, is quicker)"
        )
    return line


def announce_long(
    session: Session, settings: Settings, pending: Sequence[Sentence], measure: bool = True
) -> None:
    """One warning line for each input of ``pending`` of at least ``LONG_TOKENS`` tokens,
    with the time it will take when ``measure`` (this process runs the sentences)."""
    long = [s for s in pending if len(s.token_ids) >= LONG_TOKENS]
    if not long:
        return
    cost = measure_cost(session, settings, long[0]) if measure else None
    for sentence in long:
        log.warning(long_line(sentence, cost))
