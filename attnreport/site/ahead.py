"""Pages made ahead by worker processes while this process makes the first ones.

A render with empty caches is bound by the process that assembles the site: it builds
every figure (Altair charts, data files, compiling to Vega), and image workers can only
draw what it has built. When the site is drawn from a results folder through the figure
cache, ``start`` runs worker processes that make whole pages instead, from the last page
back, the way this process would (``make_page``: the page's figures through the figure
cache, its images into the image cache). This process makes pages from the first on and
calls ``Ahead.claim`` before each:

- a page no worker has started is taken: this process makes it, drawing its images
  itself (the workers are busy with pages);
- a page a worker is making is waited for; it is then read from the caches;
- a page whose worker failed or died is made here, as if no worker had tried.

So the two ends meet in the middle and no page is made twice. Everything a worker leaves
is a cache entry, written whole or not at all, and a cache entry is the same bytes
whichever process wrote it: the site is byte-identical to a serial render. The page
states live in a shared array guarded by its lock; a condition on that lock wakes this
process when a worker finishes a page.

Workers are started with ``spawn``, like the image workers (vl-convert runs threads
that ``fork`` would copy half-alive); as many as ``image_export.drawers`` allows
besides this process. They stop when no page is left to take.
"""

from __future__ import annotations

import hashlib
import logging
import multiprocessing
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from attnreport.results.layout import MANIFEST
from attnreport.site.chart_source import chart_builders
from attnreport.site.context import SiteOptions
from attnreport.site.page_data import intervention_indices, page_files, page_results, placed
from attnreport.site.source import SiteSource

log = logging.getLogger(__name__)

FREE, HERE, DONE, FAILED = 0, -1, -2, -3  # page states; a worker's number (1, 2, ...): making it
MIN_PAGES = 3  # fewer pages than this are made here: a worker's start costs about a page
POLL_S = 0.5  # how often a wait checks that the worker it waits for is still alive

Page = int | None  # a sentence's page, or the index (None)


def make_page(source: SiteSource, index: Page, options: SiteOptions) -> None:
    """Page ``index``'s figures into the figure cache and, when ``options.images``, its
    static images into the image cache: what the assembly makes of the page, less its HTML."""
    from attnreport.charts.export.image_export import figure_images

    pages = page_files(source, options) if index is None else ()
    figures = placed(source, page_results(source, index), index, chart_builders(), pages)
    if options.images:
        figure_images([p.figure for p in figures], png=options.png_export, workers=1)


def _work(
    folder: str, pages: Sequence[Page], state: Any, changed: Any, number: int, options: SiteOptions
) -> None:
    """A worker: take the last free page, make it, say so; stop when none is free."""
    from attnreport.site.source import from_folder

    source = None
    while True:
        with changed:
            free = [slot for slot in range(len(pages)) if state[slot] == FREE]
            if not free:
                return
            slot = free[-1]
            state[slot] = number
        try:
            source = source or from_folder(folder)
            make_page(source, pages[slot], options)
            outcome = DONE
        except Exception as error:  # the page is made again in the assembling process
            log.info("page %s made ahead failed: %s", pages[slot], error)
            outcome = FAILED
        with changed:
            state[slot] = outcome
            changed.notify_all()


@dataclass
class Ahead:
    """The pages being made by workers (see the module docstring)."""

    pages: list[Page]  # in the order the assembly makes them
    state: Any  # shared array of page states, one per page
    changed: Any  # condition on the array's lock, notified when a worker ends a page
    workers: list[Any]  # the worker processes
    key: str  # ``site_key``, remembered by the figure cache once every page is made
    made_ahead: list[Page] = field(default_factory=list)  # pages a worker made

    def claim(self, index: Page) -> bool:
        """Call before making page ``index``: True when a worker made it (read it from the
        caches), False when this process makes it (no worker did, or one failed)."""
        slot = self.pages.index(index)
        with self.changed:
            while (number := self.state[slot]) > 0 and self.workers[number - 1].is_alive():
                self.changed.wait(POLL_S)
            if self.state[slot] == DONE:
                self.made_ahead.append(index)
                return True
            self.state[slot] = HERE
            return False

    def close(self, finished: bool = True) -> None:
        """Wait for the workers (each ends once no page is free); when not ``finished``
        (the assembly failed), take every free page back and stop them at once."""
        if not finished:
            with self.changed:
                for slot in range(len(self.pages)):
                    if self.state[slot] == FREE:
                        self.state[slot] = HERE
            for worker in self.workers:
                worker.terminate()
        for worker in self.workers:
            worker.join()
        if finished:
            from attnreport.charts.export.figure_cache import default_cache

            default_cache().remember_site(self.key)


def site_key(source: SiteSource, pages: Sequence[Page], options: SiteOptions) -> str:
    """What the figures and images of these pages depend on, as one cache key: the code,
    the pages, the options and the digests of the results files the pages read (the
    manifest, the set-wide files, their sentences and the interventions' inputs; not the
    rest of a corpus whose ``--pages`` leave it out)."""
    from attnreport.charts.export.figure_cache import code_version

    sentences = {i for i in pages if i is not None} | set(intervention_indices(source))
    layout = source.layout
    read = {*(layout.sentence(i) for i in sentences), MANIFEST, layout.set, layout.interventions}
    parts = [code_version(), repr(list(pages)), repr(options)]
    parts += [f"{name} {source.digest(name)}" for name in sorted(read & set(source.files))]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def start(source: SiteSource, pages: Sequence[Page], options: SiteOptions) -> Ahead | None:
    """Start workers making ``pages`` (in the assembly's order) from the last back, or
    None when it would not help or cannot be: results not from a folder, fewer than
    ``MIN_PAGES`` pages, this process a daemon (which may not start processes), every
    page made before (the figure cache remembers the site), or no core free besides
    this process's."""
    from attnreport.charts.export.figure_cache import default_cache
    from attnreport.charts.export.image_export import drawers

    if source.folder is None or len(pages) < MIN_PAGES:
        return None
    if multiprocessing.current_process().daemon:  # it may not start processes
        return None
    key = site_key(source, pages, options)
    if default_cache().holds_site(key):
        return None
    count = min(drawers() - 1, len(pages) - 1)
    if count < 1:
        return None
    context = multiprocessing.get_context("spawn")
    state = context.Array("i", len(pages))
    changed = context.Condition(state.get_lock())
    folder = str(Path(source.folder).resolve())
    workers = []
    try:
        for number in range(1, count + 1):
            args = (folder, list(pages), state, changed, number, options)
            worker = context.Process(target=_work, args=args, daemon=True)
            worker.start()
            workers.append(worker)
    except OSError as error:  # cannot start processes: make every page here
        log.warning("pages made ahead: worker processes failed to start (%s)", error)
        Ahead(list(pages), state, changed, workers, key).close(finished=False)
        return None
    return Ahead(list(pages), state, changed, workers, key)
