"""``serve --watch`` as a library call: build once, then rebuild on every save and tell
the open pages, until stopped.

``watch_site`` serves the site folder from a background thread (``serve.server``) and
runs the builds in the calling thread, which holds the model: a build is never
interrupted by a save (the save is seen when it ends, so a build always reads whole
files). Every build, good or failed, is published to the pages (``LiveState``); a
failed one leaves the last good site on disk and served, with a banner. The terminal
gets one line per build through ``report`` and, for work over several sentences or a
model load, a progress display (``Lazy``).

A build puts its site up before the intervention grids when they must run again (most
of a save's forward passes: an edited sentence is one pass, the grids over two short
sentences 24); the grids follow (``finish_grids``), and the site is drawn and published
again with them. A save that arrives while they run stops them between two passes
(``Superseded``), so grids of the earlier text are never published over the newer one;
the next build takes them up again from its own sentences.
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
Waiting = Callable[[], bool]  # whether a save waits to be built
# The grids' progress reports: their start, and each forward pass (``corpus.run.PASSES``),
# where a waiting save stops them.
GRID_STEPS = ("interventions", "interventions:passes")


def long_work(stage: str, done: int, total: int) -> bool:
    """A model load, or sentences to capture beyond the first."""
    return stage == "model" or stage == "capture" and total - done > 1


class Lazy:
    """A ``Progress`` that opens ``display`` only for long work (``opens``: by default
    ``long_work``), so a one-sentence save prints one line."""

    def __init__(
        self, display: Display, opens: Callable[[str, int, int], bool] = long_work
    ) -> None:
        self.display, self.opens, self.opened, self.shown = display, opens, None, None

    def __call__(self, stage: str, done: int, total: int) -> None:
        if self.shown is None and self.opens(stage, done, total):
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
    follow = "; the intervention grids follow" if report.grids_left else ""
    return f"{why}: {', '.join(parts)} in {seconds:.1f} s ({spent}){follow}"


def build_once(
    project: Project,
    state: LiveState,
    report: Report,
    display: Display,
    why: str,
    defer_images: bool = False,
) -> bool:
    """One build, published to the pages and reported in one line; False when it failed.
    Grids that must run again are left to ``finish_grids``."""
    start = time.perf_counter()
    progress = Lazy(display)
    try:
        result = project.build(progress, defer_images, defer_grids=True)
    except AttnReportError as err:
        progress.close(failed=True)
        state.publish(str(err))
        report(f"error: {err} (still serving the last good site)")
        return False
    except Exception as err:  # a bug must not stop the server; the page says what it was
        progress.close(failed=True)
        log.debug("build failed", exc_info=True)
        message = one_line(err)
        state.publish(message)
        report(f"error: {message} (still serving the last good site)")
        return False
    progress.close(failed=False)
    state.publish(None, result.moved)
    report(describe(result, why, time.perf_counter() - start))
    return True


def one_line(err: BaseException) -> str:
    return f"{type(err).__name__}: {err}".splitlines()[0]


class Superseded(Exception):  # noqa: N818 - what happened to the grids, not a failure
    """A save waits: the grids of the last build stop, and the save is built."""


def finish_grids(
    project: Project, state: LiveState, report: Report, display: Display, waiting: Waiting
) -> bool:
    """The grids the last build left (``Project.finish_grids``), with a progress display
    (they are long work), then the site drawn again with them and published; False when
    they did not finish. ``waiting()`` is asked before each forward pass: a save waiting
    stops them (``Superseded``), the site is left as it was and the save is built next.
    A failure puts a banner on the pages, which keep the notes in the grids' place."""
    start = time.perf_counter()
    progress = Lazy(display, lambda _stage, _done, _total: True)

    def heard(stage: str, done: int, total: int) -> None:
        progress(stage, done, total)
        if stage in GRID_STEPS and waiting():
            raise Superseded

    try:
        passes = project.finish_grids(heard)
    except Superseded:
        progress.close(failed=True)
        report("  intervention grids: stopped for a newer save")
        return False
    except Exception as err:  # as a build's: the server stays up and the pages say why
        progress.close(failed=True)
        log.debug("grids failed", exc_info=True)
        message = str(err) if isinstance(err, AttnReportError) else one_line(err)
        state.publish(f"the intervention grids did not finish: {message}")
        report(f"error: the intervention grids did not finish: {message}")
        return False
    progress.close(failed=False)
    state.publish(None)
    took = time.perf_counter() - start
    report(f"  intervention grids: {passes} forward passes, site rendered again in {took:.1f} s")
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
        built = build_once(project, state, report, display, "first build")
        follow_up(project, state, report, display, watcher, built)
        while kinds := watcher.wait(stop_when):
            why = " and ".join(kinds) + " changed"
            built = build_once(project, state, report, display, why, defer_images=True)
            follow_up(project, state, report, display, watcher, built)
    finally:
        stop(server, state)


def follow_up(
    project: Project, state: LiveState, report: Report, display: Display, watcher: Watcher,
    built: bool,
) -> None:  # fmt: skip
    """What a good build left for after its site went up: the grids, then the static
    images, each only while no save waits (the save comes first)."""
    watcher.absorb("results")
    if built and project.grids_left is not None and not watcher.pending():
        finish_grids(project, state, report, display, watcher.pending)
        watcher.absorb("results")
    if built and not watcher.pending():
        draw_images(project, report)
