"""Stopping ``serve --watch`` within a second or two of Ctrl-C or SIGTERM.

Either signal raises ``KeyboardInterrupt`` in the main thread, which unwinds whatever
build is under way (the site writer removes its temporary folder; workers that make
pages ahead are terminated) and closes the server. The process then ends at once with
``exit_now``: its worker processes (image drawing, pages made ahead) are terminated, the
exit handlers run, and the interpreter's own teardown, which spent seconds freeing the
model's tensors one by one, is skipped. Every file was written whole already (sites are
swapped in by a rename, results files written atomically), so nothing on disk needs it.

Python runs a signal handler only between bytecodes: a build inside one long native
call (a forward pass over a long input) would hold up the unwinding. So the first
signal also starts a deadline: ``STOP_S`` later the process ends regardless, as a kill
would, which the writers are made to survive (the next build removes a temporary
folder; ``--resume`` drops a half-written file). A second signal ends it at once. Either
way it exits 0 with its closing line: it stopped, as asked.
"""

from __future__ import annotations

import atexit
import contextlib
import multiprocessing
import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import NoReturn

STOP_S = 1.5  # the unwinding's deadline after the first signal


class Stopper:
    """Ends the process on Ctrl-C (SIGINT) or SIGTERM as the module docstring says;
    ``said()`` prints the closing line, once, whichever way the process ends (exit 0: it
    stopped as asked)."""

    def __init__(self, said: Callable[[], None]) -> None:
        self.said = said
        self.lock = threading.Lock()
        self.signalled = False
        self.ended = False

    def install(self) -> None:
        """Handle both signals (call from the main thread)."""
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, self._on_signal)

    def _on_signal(self, _signum: int, _frame: object) -> None:
        if self.signalled:
            self.stop()
        self.signalled = True
        deadline = threading.Timer(STOP_S, self.stop)
        deadline.daemon = True
        deadline.start()
        raise KeyboardInterrupt

    def stop(self) -> NoReturn:
        """Say the closing line (once) and end the process now."""
        with self.lock:
            if not self.ended:
                self.ended = True
                self.said()
            exit_now(0)


def stop_children() -> None:
    """Terminate this process's worker processes (the image drawers' pool, the pages made
    ahead) without waiting for the work they hold."""
    from attnreport.charts.export import image_export

    pool, image_export._pool = image_export._pool, None  # noqa: SLF001 - ours to stop
    if pool is not None:
        pool[1].shutdown(wait=False, cancel_futures=True)
    children = multiprocessing.active_children()
    for child in children:
        child.terminate()
    for child in children:
        child.join(timeout=0.5)


def exit_now(code: int) -> NoReturn:
    """End the process now with ``code`` (see the module docstring)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed or broken pipe
            stream.flush()
    try:
        stop_children()
        atexit._run_exitfuncs()  # noqa: SLF001 - the handlers, without the teardown
    finally:
        os._exit(code)
