"""How long a test waits for something slow, on a machine that may be busy (issue 43).

Every bounded wait in the suite (a subprocess's timeout, a poll for a line, a file or a
served page, a browser's wait for the page's own signal) is ``patience(s)`` seconds
(``patience_ms(s)`` for Playwright): ``s``, what the wait may take on an idle machine with
room to spare, times one factor, ``ATTNREPORT_TEST_TIME_SCALE`` (default 4: a fresh-clone
CI run at load 10-17 on 2 cores ran that much slower, and failed waits that were short for
it). A wait ends as soon as its condition holds, so a large factor costs a passing run
nothing; it only makes a hung test fail later. Raise it on a slower machine, never lower
a test's own ``s`` to make a run pass.

Nothing in the suite sleeps a fixed time to let something happen (it polls for the thing,
or the page says it is done: ``data-rendered``, ``window.attnreport.settled()``), and no
test asserts how long something took, except where speed is what a user was promised;
those bounds say why they hold on a busy machine. Timings belong to ``benchmarks/``.
"""

from __future__ import annotations

import os

SCALE = float(os.environ.get("ATTNREPORT_TEST_TIME_SCALE", "") or 4)


def patience(seconds: float) -> float:
    """``seconds`` (enough on an idle machine) scaled for this machine, in seconds."""
    return seconds * SCALE


def patience_ms(seconds: float) -> int:
    """``patience(seconds)`` in milliseconds, as Playwright takes timeouts."""
    return round(patience(seconds) * 1000)
