"""The study's stages as plain lines, for a log that is not a terminal (a CI runner, a
file, a pipe): where ``RichProgress`` would draw a live display that such a log never
shows, ``PlainProgress`` prints one line when a stage starts, then one each time its
count passes another tenth or 30 s went by without a line, with the rate and the time
left at that rate, and one when it ends. Each line is flushed as it is printed.

``progress_display()`` picks one of the two: rich when stderr is a terminal, else plain
lines on stdout, in order with the command's own output.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from attnreport.corpus.progress import RichProgress

# What each stage (and each count within one, "stage:part") is called on the screen.
STAGES = {
    "load": "Loading model",
    "capture": "Capturing sentences",
    "interventions": "Running interventions",
    "site": "Drawing charts and pages",
    "write": "Writing",
    "capture:layers": "  layers of the sentence(s) in flight",
    "interventions:contrast": "  sentences captured in the other BOS condition",
    "interventions:passes": "  forward passes of the grids",
}
EVERY_S = 30.0  # a line at least this often while a count moves
ROW_QUIET_S = 10.0  # a count within a stage prints nothing before it has run this long
STEPS = 10  # ... and one each time it passes another tenth


def duration(seconds: float) -> str:
    """``42 s``, ``3 min 5 s``, ``2 h 4 min``: a time for a reader."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes, secs = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {secs} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"


@dataclass
class _Count:
    """One stage's (or a row within it) count since it started or restarted."""

    label: str
    total: int
    start: float
    done: int = 0
    first: int = 0  # the count when it (re)started: the rate counts from here
    printed_at: float = 0.0
    printed_step: int = 0

    def line(self, now: float) -> str:
        text = f"{self.label}: {self.done} of {self.total} ({100 * self.done // self.total}%)"
        elapsed, moved = now - self.start, self.done - self.first
        if moved > 0 and elapsed > 0:
            rate = moved / elapsed
            each = 1 / rate
            text += (
                f", {rate:.3g}/s"
                if rate >= 1
                else f", {each:.3g} s each"
                if each < 60
                else f", {duration(each)} each"
            )
            if self.done < self.total:
                text += f", about {duration((self.total - self.done) / rate)} left"
        return text


class PlainProgress:
    """A ``Progress`` (stage, done, total) printed as plain lines on ``stream`` (see the
    module docstring); ``clock`` gives seconds (tests pass their own)."""

    LABELS = STAGES

    def __init__(
        self, stream: TextIO | None = None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.stream = stream if stream is not None else sys.stdout
        self.clock = clock
        self.stage: _Count | None = None
        self.rows: dict[str, _Count] = {}

    def __call__(self, stage: str, done: int, total: int) -> None:
        now = self.clock()
        if ":" in stage:
            self._row(stage, done, total, now)
            return
        if self.stage is None or self.stage.label != self.LABELS.get(stage, stage):
            self._end(now)
            self.stage = _Count(self.LABELS.get(stage, stage), max(total, 1), now, done, done)
            self.rows.clear()
            self._print(self.stage.label + ("" if total <= 1 else f": {done} of {total}"), now)
            self.stage.printed_step = self._step(self.stage)
            return
        self._advance(self.stage, done, total, now)

    def _row(self, stage: str, done: int, total: int, now: float) -> None:
        """A count within the current stage (layers of a sentence, passes of the grids),
        restarted when it starts again at 0 or 1."""
        row = self.rows.get(stage)
        if row is None or done <= 1 and row.done >= done:
            row = _Count(self.LABELS.get(stage, stage), max(total, 1), now, done, done, now)
            self.rows[stage] = row
            return
        self._advance(row, done, total, now)

    def _advance(self, count: _Count, done: int, total: int, now: float) -> None:
        count.done, count.total = done, max(total, 1)
        if count is not self.stage and now - count.start < ROW_QUIET_S:
            return  # a row done in seconds (each of 200 short sentences) would flood the log
        step = self._step(count)
        if step > count.printed_step or now - count.printed_at >= EVERY_S:
            count.printed_step = step
            self._print(count.line(now), now, count)

    @staticmethod
    def _step(count: _Count) -> int:
        return STEPS * count.done // count.total

    def _end(self, now: float) -> None:
        if self.stage is not None:
            took = duration(now - self.stage.start)
            self._print(f"{self.stage.label}: done in {took}", now)

    def _print(self, line: str, now: float, count: _Count | None = None) -> None:
        print(line, file=self.stream, flush=True)
        for each in (count, self.stage):
            if each is not None:
                each.printed_at = now

    def __enter__(self) -> PlainProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is None:
            self._end(self.clock())


def progress_display() -> RichProgress | PlainProgress:
    """The progress display of a command: ``RichProgress`` on a terminal (stderr), else
    ``PlainProgress`` on stdout."""
    if sys.stderr.isatty():
        from attnreport.corpus.progress import RichProgress

        return RichProgress()
    return PlainProgress()
