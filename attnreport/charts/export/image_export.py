"""Static images of many figures at once: cached, and drawn in parallel when cores are free.

``start_images(figs, png=...)`` is what a site build calls, once per page: it starts the
drawing and returns an ``Export`` whose ``result()`` waits for it, so the build can make
the next page's figures while this page's images are drawn. ``figure_images`` does both
at once. For each figure the result is ``{"svg": bytes, "png": bytes}`` (no ``"png"``
when ``png`` is False), or ``{}`` when the figure has no static image (no static spec,
over the size bound, or vl-convert failed; see ``images``).

- Cache: a figure whose static spec was drawn before by the same exporter version (and
  with a PNG when one is asked for) is read from the user's image cache
  (``image_cache``), not drawn again. Two figures with the same spec are drawn once.
- Parallel: when more than one core is free (``free_cores``: measured from /proc/stat
  over a moment, else the load average) and there are at least ``MIN_PARALLEL`` figures
  to draw (or a pool is already running), ``worker_count`` processes draw, this one
  included: a pool of one fewer worker processes draws while this process goes on making
  the next pages, and when this process has to wait for a page's images it draws those
  the workers have not started yet, from the last (``Export.result``). So on 2 free cores
  one worker draws beside the build instead of two workers taking the core the build
  needs. Workers are started with ``spawn`` (vl-convert runs V8 and tokio threads, which
  ``fork`` would copy half-alive), live as long as this process and are reused by later
  pages. At most ``MAX_WORKERS`` processes draw, each holding one figure's spec and
  images at a time, which bounds the memory. If a pool cannot be started or breaks, the
  figures not yet drawn are drawn here, one after another.
- The bytes are the same either way: ``images.render_static`` renumbers the SVG ids Vega
  draws from a per-process counter, and everything else vl-convert writes depends only on
  the spec.

``ATTNREPORT_IMAGE_WORKERS=N`` fixes the number of processes that draw, this one
included (1: draw here only).
"""

from __future__ import annotations

import atexit
import concurrent.futures as cf
import logging
import multiprocessing
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from attnreport.charts.export import images
from attnreport.charts.export.image_cache import ImageCache, default_cache, image_key
from attnreport.charts.figure import Figure
from attnreport.jsontypes import VegaSpec

log = logging.getLogger(__name__)

MAX_WORKERS = 4  # processes that draw, this one included
MIN_PARALLEL = 4  # fewer figures than this are drawn here: starting workers costs more
Drawn = tuple[bytes, bytes] | str  # (svg, png or b""), or vl-convert's error message
Started = dict[str, "cf.Future[Drawn]"]  # key -> its drawing, under way in a worker process

_pool: tuple[int, cf.ProcessPoolExecutor] | None = None


def _cpu_times(cpus: set[int]) -> dict[int, tuple[int, int]]:
    """cpu -> (idle, total) jiffies of the given CPUs, from /proc/stat ({} elsewhere)."""
    try:
        lines = Path("/proc/stat").read_text().splitlines()
    except OSError:
        return {}
    times = {}
    for line in lines:
        name, *values = line.split()
        if name.startswith("cpu") and name[3:].isdigit() and int(name[3:]) in cpus:
            ticks = [int(v) for v in values[:8]]  # user nice system idle iowait irq softirq steal
            times[int(name[3:])] = (ticks[3] + ticks[4], sum(ticks))
    return times


def free_cores(interval: float = 0.2) -> int:
    """Cores this process may use that other processes are not busy on (at least 1).

    Measured over ``interval`` seconds from /proc/stat, on the CPUs this process may run
    on (this process sleeps meanwhile, so it counts as idle). Elsewhere, the 1-minute load
    average, which lags: right after a heavy process it still counts that one as busy.
    """
    cpus = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else set()
    before = _cpu_times(cpus)
    if before:
        time.sleep(interval)
        after = _cpu_times(cpus)
        busy = 0.0
        for cpu in after.keys() & before.keys():
            spent = after[cpu][1] - before[cpu][1]
            if spent > 0:
                busy += 1 - (after[cpu][0] - before[cpu][0]) / spent
        return max(1, len(cpus) - round(busy))
    cores = os.cpu_count() or 1
    try:
        busy_now = round(os.getloadavg()[0])
    except OSError:
        busy_now = 1
    return max(1, min(cores, cores - busy_now + 1))


def _fixed_drawers() -> int | None:
    """``ATTNREPORT_IMAGE_WORKERS`` when it is a count of at least 1, else None."""
    fixed = os.environ.get("ATTNREPORT_IMAGE_WORKERS", "").strip()
    return int(fixed) if fixed.isdigit() and int(fixed) >= 1 else None


def drawers() -> int:
    """Processes that may work at once, this one included: ``ATTNREPORT_IMAGE_WORKERS``
    when set, else the free cores (at most ``MAX_WORKERS``)."""
    return _fixed_drawers() or max(1, min(free_cores(), MAX_WORKERS))


def worker_count(n_figures: int) -> int:
    """Processes to draw ``n_figures`` figures, this one included (1: draw them here)."""
    if fixed := _fixed_drawers():
        return fixed
    if _pool is not None:
        return _pool[0]
    if n_figures < MIN_PARALLEL:
        return 1
    return drawers()


def draw(spec: VegaSpec, png: bool | float = True) -> Drawn:
    """One static spec's (SVG, PNG), or the error text; runs here or in a worker."""
    try:
        return images.render_static(spec, png)
    except Exception as error:  # vl-convert raises ValueError/RuntimeError on bad specs
        return f"{type(error).__name__}: {error}"


def shutdown_pool() -> None:
    """Stop the worker processes, if any (a later parallel export starts new ones)."""
    global _pool
    if _pool is not None:
        _pool[1].shutdown(wait=True, cancel_futures=True)
        _pool = None


# Stop the pool while the interpreter is whole: one collected during its teardown prints
# a traceback from concurrent.futures. (With no pool, this does nothing.)
atexit.register(shutdown_pool)


def _executor(workers: int) -> cf.ProcessPoolExecutor:
    global _pool
    if _pool is None or _pool[0] != workers:
        shutdown_pool()
        context = multiprocessing.get_context("spawn")
        _pool = (workers, cf.ProcessPoolExecutor(workers - 1, mp_context=context))
    return _pool[1]


def _broken(error: BaseException) -> None:
    log.warning("image export: worker processes failed (%s); drawing here", error)
    shutdown_pool()


def _submit(specs: Mapping[str, VegaSpec], png: bool | float, workers: int) -> Started:
    """key -> future of ``draw`` (or the drawing itself when drawn here)."""
    started: Started = {}
    if workers > 1:
        try:
            pool = _executor(workers)
            for key, spec in specs.items():
                started[key] = pool.submit(draw, spec, png)
        except (OSError, RuntimeError, cf.BrokenExecutor) as error:
            _broken(error)  # RuntimeError: submit after a shutdown
    return started


def _pair(fig: Figure, drawn: Drawn | None) -> dict[str, bytes]:
    if drawn is None:
        return {}
    if isinstance(drawn, str):
        log.warning("figure %s: vl-convert failed: %s", fig.key, drawn)
        return {}
    return {"svg": drawn[0], "png": drawn[1]} if drawn[1] else {"svg": drawn[0]}


@dataclass
class Export:
    """The static images of some figures, being drawn; ``result()`` waits for them."""

    figs: Sequence[Figure]
    keys: list[str | None]  # each figure's cache key (None: no static image)
    found: dict[str, Drawn | None]  # key -> drawing (None: not drawn yet)
    specs: dict[str, VegaSpec]  # key -> spec of each drawing still to come
    started: Started  # key -> future, for those given to the worker processes
    png: bool | float  # False: no PNG; True: at ``images.PNG_SCALE``; a number: that scale
    store: ImageCache | None

    def result(self) -> list[dict[str, bytes]]:
        """``{"svg": ..., "png": ...}`` (or ``{}``) of each figure, in order. Figures the
        workers have not started are drawn here meanwhile, from the last one back."""
        while (key := self._unstarted()) is not None:
            del self.started[key]
            self._keep(key, draw(self.specs[key], self.png))
        for key, spec in self.specs.items():
            if self.found[key] is not None:
                continue
            drawn = None
            if key in self.started:
                try:
                    drawn = self.started[key].result()
                except (OSError, cf.BrokenExecutor, cf.CancelledError) as error:
                    _broken(error)
            self._keep(key, drawn if drawn is not None else draw(spec, self.png))
        self.specs, self.started = {}, {}
        return [_pair(f, self.found[k] if k else None) for f, k in zip(self.figs, self.keys, strict=True)]  # fmt: skip

    def _unstarted(self) -> str | None:
        """The last figure still queued for the workers, taken back from them (None when
        every one has started)."""
        for key in reversed(self.started):
            if self.started[key].cancel():
                return key
        return None

    def _keep(self, key: str, drawn: Drawn) -> None:
        self.found[key] = drawn
        if self.store and not isinstance(drawn, str):
            self.store.put(key, *drawn)


def _png_key(png: bool | float) -> str:
    """What the PNG choice adds to the image cache key."""
    if png is True:
        return ""
    return f"; png scale {float(png):g}" if png else "; svg only"


def start_images(
    figs: Sequence[Figure],
    *,
    png: bool | float = True,
    cache: ImageCache | bool = True,
    workers: int | None = None,
) -> Export:
    """Start drawing the static images of ``figs`` (see ``Export.result``).

    ``png``: also a PNG of each (True: at ``images.PNG_SCALE``; a number: at that scale);
    ``cache``: True for the user's image cache, False for
    none, or an ``ImageCache``; ``workers``: processes that draw the figures not cached,
    this one included (default: ``worker_count``; 1 draws them all here, in ``result``).
    """
    store = default_cache() if cache is True else (cache or None)
    exporter = images.exporter_version() + _png_key(png)
    keys = [image_key(f.static_spec, exporter) if images.exportable(f) else None for f in figs]
    found: dict[str, Drawn | None] = {}
    for key in filter(None, keys):
        if key not in found:
            found[key] = store.get(key) if store else None
    specs = {k: f.static_spec for k, f in zip(keys, figs, strict=True) if k and found[k] is None}
    started = _submit(specs, png, workers or worker_count(len(specs))) if specs else {}
    return Export(figs, keys, found, specs, started, png, store)  # type: ignore[arg-type]


def figure_images(
    figs: Sequence[Figure],
    *,
    png: bool | float = True,
    cache: ImageCache | bool = True,
    workers: int | None = None,
) -> list[dict[str, bytes]]:
    """``{"svg": bytes, "png": bytes}`` (or ``{}``) of each figure, in order: the images
    of ``start_images`` with the same arguments, waited for."""
    return start_images(figs, png=png, cache=cache, workers=workers).result()
