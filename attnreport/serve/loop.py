"""``serve --watch`` as a library call: build once, then rebuild on every save and tell
the open pages, until stopped.

``watch_site`` serves the site folder from a background thread (``serve.server``) and
runs the builds in the calling thread, which holds the model: a build is never
interrupted by a save (the save is seen when it ends, so a build always reads whole
files). Every build, good or failed, is published to the pages (``LiveState``); a
failed one leaves the last good site on disk and served, with a banner. The terminal
gets one line per build through ``report`` and, for work over several sentences or a
model load, a progress display (``Lazy``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from contextlib import AbstractContextManager

from attnreport.build import Progress
from attnreport.errors import AttnReportError
from attnreport.serve.project import BuildReport, Project
from attnreport.serve.server import LiveState, make_server, serve_in_background, stop
from attnreport.serve.watcher import Watcher

log = logging.getLogger(__name__)

Report = Callable[[str], None]  # one line for the terminal
Display = Callable[[], AbstractContextManager[Progress]]  # a progress display (rich)


class Lazy:
    """A ``Progress`` that opens ``display`` only for long work (a model load, or
    sentences to capture beyond the first), so a one-sentence save prints one line."""

    def __init__(self, display: Display) -> None:
        self.display, self.opened, self.shown = display, None, None

    def __call__(self, stage: str, done: int, total: int) -> None:
        if self.shown is None and (stage == "model" or stage == "capture" and total - done > 1):
            self.opened = self.display()
            self.shown = self.opened.__enter__()
        if self.shown is not None:
            self.shown("load" if stage == "model" else stage, done, total)

    def close(self, failed: bool) -> None:
        if self.opened is not None:
            error = (AttnReportError, AttnReportError("failed"), None) if failed else (None,) * 3
            self.opened.__exit__(*error)


def describe(report: BuildReport, why: str, seconds: float) -> str:
    """One line: what changed, what was done, how long it took."""
    parts = []
    if report.loaded:
        parts.append("loaded the model")
    if report.analysis == "all":
        parts.append("analysed every sentence")
    elif report.analysis == "resume":
        parts.append("finished a stopped analysis")
    elif report.analysis == "sentences" and report.analysed:
        shown = ", ".join(str(i) for i in report.analysed[:8])
        more = "..." if len(report.analysed) > 8 else ""
        parts.append(f"analysed sentence(s) {shown}{more}")
    parts.append(f"rendered {report.pages} page(s)")
    spent = ", ".join(f"{part} {s:.1f} s" for part, s in report.seconds.items())
    return f"{why}: {', '.join(parts)} in {seconds:.1f} s ({spent})"


def build_once(
    project: Project,
    state: LiveState,
    report: Report,
    display: Display,
    why: str,
    defer_images: bool = False,
) -> bool:
    """One build, published to the pages and reported in one line; False when it failed."""
    start = time.perf_counter()
    progress = Lazy(display)
    try:
        result = project.build(progress, defer_images)
    except AttnReportError as err:
        progress.close(failed=True)
        state.publish(str(err))
        report(f"error: {err} (still serving the last good site)")
        return False
    except Exception as err:  # a bug must not stop the server; the page says what it was
        progress.close(failed=True)
        log.debug("build failed", exc_info=True)
        message = f"{type(err).__name__}: {err}".splitlines()[0]
        state.publish(message)
        report(f"error: {message} (still serving the last good site)")
        return False
    progress.close(failed=False)
    state.publish(None, result.moved)
    report(describe(result, why, time.perf_counter() - start))
    return True


def draw_images(project: Project, report: Report) -> None:
    """The static images a build deferred, drawn while no save waits; the open pages
    are not reloaded (with scripts on, they show none of them)."""
    start = time.perf_counter()
    try:
        drawn = project.draw_images()
    except Exception as err:  # the site without images stays; the next build tries again
        report(f"error: drawing the static images: {err}".splitlines()[0])
        return
    if drawn:
        report(f"  static images drawn in {time.perf_counter() - start:.1f} s")


def watch_site(
    project: Project,
    host: str,
    port: int,
    report: Report,
    display: Display,
    ready: Callable[[str], None] = lambda _url: None,
    stop_when: Callable[[], bool] = lambda: False,
) -> None:
    """Build, serve ``project.site`` on ``host:port`` and rebuild on every save until
    ``stop_when()`` or Ctrl-C (KeyboardInterrupt, after which the server is closed).
    ``ready`` gets the address once the server listens. OSError when it cannot listen."""
    state = LiveState()
    server = make_server(project.site.resolve(), host, port, state)
    try:
        serve_in_background(server)
        ready(f"http://{host}:{server.server_address[1]}/")
        watcher = Watcher(project.watched)
        build_once(project, state, report, display, "first build")
        watcher.absorb("results")
        while kinds := watcher.wait(stop_when):
            why = " and ".join(kinds) + " changed"
            built = build_once(project, state, report, display, why, defer_images=True)
            watcher.absorb("results")
            if built and not watcher.pending():
                draw_images(project, report)
    finally:
        stop(server, state)
