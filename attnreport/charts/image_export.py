"""Static images of many figures at once: cached, and drawn in parallel when cores are free.

``figure_images(figs)`` is what a site build calls, once per page. For each figure it
returns ``{"svg": bytes, "png": bytes}``, or ``{}`` when the figure has no static image
(no static spec, over the size bound, or vl-convert failed; see ``images``).

- Cache: a figure whose static spec was drawn before by the same exporter version is read
  from the user's image cache (``image_cache``), not drawn again. Two figures with the same
  spec are drawn once.
- Parallel: the figures left to draw go to a pool of worker processes when there are at
  least ``MIN_PARALLEL`` of them and more than one core is free (``free_cores``). Workers
  are started with ``spawn`` (vl-convert runs V8 and tokio threads, which ``fork`` would
  copy half-alive), live as long as this process and are reused by later pages. Each
  worker holds one figure's spec and images at a time, and there are at most
  ``MAX_WORKERS`` of them, which bounds the memory. If a pool cannot be started or breaks,
  the remaining figures are drawn here, one after another.
- The bytes are the same either way: ``images.render_static`` renumbers the SVG ids Vega
  draws from a per-process counter, and everything else vl-convert writes depends only on
  the spec.

``ATTNREPORT_IMAGE_WORKERS=N`` fixes the number of worker processes (1: draw here).
"""

from __future__ import annotations

import concurrent.futures as cf
import logging
import multiprocessing
import os
from collections.abc import Sequence
from typing import Any

from attnreport.charts import images
from attnreport.charts.figure import Figure
from attnreport.charts.image_cache import ImageCache, default_cache, image_key

log = logging.getLogger(__name__)

MAX_WORKERS = 4
MIN_PARALLEL = 4  # fewer figures than this are drawn here: starting workers costs more
Drawn = tuple[bytes, bytes] | str  # (svg, png), or vl-convert's error message

_pool: tuple[int, cf.ProcessPoolExecutor] | None = None


def free_cores() -> int:
    """Cores this process may use that other processes are not busy on (at least 1).

    The 1-minute load average counts runnable processes, this one among them; it waits
    while the workers draw, so its own core counts as free.
    """
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    try:
        busy = round(os.getloadavg()[0])
    except OSError:
        busy = 1
    return max(1, min(cores or 1, (cores or 1) - busy + 1))


def worker_count(n_figures: int) -> int:
    """Worker processes for ``n_figures`` figures to draw; 1 means draw them here."""
    fixed = os.environ.get("ATTNREPORT_IMAGE_WORKERS", "").strip()
    if fixed.isdigit() and int(fixed) >= 1:
        return min(int(fixed), n_figures) or 1
    if n_figures < MIN_PARALLEL:
        return 1
    return max(1, min(free_cores(), MAX_WORKERS, n_figures))


def draw(spec: dict[str, Any]) -> Drawn:
    """One static spec's (SVG, PNG), or the error text; runs here or in a worker."""
    try:
        return images.render_static(spec)
    except Exception as error:  # vl-convert raises ValueError/RuntimeError on bad specs
        return f"{type(error).__name__}: {error}"


def shutdown_pool() -> None:
    """Stop the worker processes, if any (a later parallel export starts new ones)."""
    global _pool
    if _pool is not None:
        _pool[1].shutdown(wait=True, cancel_futures=True)
        _pool = None


def _executor(workers: int) -> cf.ProcessPoolExecutor:
    global _pool
    if _pool is None or _pool[0] != workers:
        shutdown_pool()
        context = multiprocessing.get_context("spawn")
        _pool = (workers, cf.ProcessPoolExecutor(workers, mp_context=context))
    return _pool[1]


def draw_all(specs: Sequence[dict[str, Any]], workers: int) -> list[Drawn]:
    """``draw`` of every spec, in order; in ``workers`` processes when more than one."""
    done: list[Drawn] = []
    if workers > 1 and len(specs) > 1:
        try:
            done.extend(_executor(workers).map(draw, specs))
        except (OSError, cf.BrokenExecutor) as error:  # BrokenExecutor: a worker died
            log.warning("image export: worker processes failed (%s); drawing here", error)
            shutdown_pool()
    return done + [draw(spec) for spec in specs[len(done) :]]


def _pair(fig: Figure, drawn: Drawn | None) -> dict[str, bytes]:
    if drawn is None:
        return {}
    if isinstance(drawn, str):
        log.warning("figure %s: vl-convert failed: %s", fig.key, drawn)
        return {}
    return {"svg": drawn[0], "png": drawn[1]}


def figure_images(
    figs: Sequence[Figure], *, cache: ImageCache | bool = True, workers: int | None = None
) -> list[dict[str, bytes]]:
    """``{"svg": bytes, "png": bytes}`` (or ``{}``) of each figure, in order.

    ``cache``: True for the user's image cache, False for none, or an ``ImageCache``.
    ``workers``: worker processes for the figures not cached (default: ``worker_count``).
    """
    store = default_cache() if cache is True else (cache or None)
    exporter = images.exporter_version()
    keys = [image_key(f.static_spec, exporter) if images.exportable(f) else None for f in figs]
    found: dict[str, Drawn | None] = {}
    for key in filter(None, keys):
        if key not in found:
            found[key] = store.get(key) if store else None
    missing = [k for k, v in found.items() if v is None]
    specs = {k: f.static_spec for k, f in zip(keys, figs, strict=True) if k in missing}
    fresh = draw_all([specs[k] for k in missing], workers or worker_count(len(missing)))
    for key, drawn in zip(missing, fresh, strict=True):
        found[key] = drawn
        if store and not isinstance(drawn, str):
            store.put(key, *drawn)
    return [_pair(f, found[k] if k else None) for f, k in zip(figs, keys, strict=True)]
