"""Pages made ahead by worker processes: the same site, byte for byte, and every way a
worker can fail leaves its pages to the assembling process."""

from __future__ import annotations

from dataclasses import replace

import pytest

from attnreport.output import write_site
from attnreport.results import dump
from attnreport.site import ahead, default_charts
from attnreport.site.assemble import assemble_site
from attnreport.site.context import SiteOptions
from attnreport.site.source import from_folder
from tests.fixtures.fake_results import fake_study, typed

OPTIONS = SiteOptions(png=False)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    results = typed(fake_study())
    assert len(results.sentences) >= 2  # with the index: at least MIN_PAGES pages
    return write_site(dump(results), tmp_path_factory.mktemp("ahead") / "results")


def render(folder, cache, workers, monkeypatch, made=None):
    """The site's files with an empty cache ``cache`` and ``workers`` processes; the
    ``Ahead`` started (or None) is appended to ``made``."""
    monkeypatch.setenv("ATTNREPORT_CACHE", str(cache))
    monkeypatch.setenv("ATTNREPORT_IMAGE_WORKERS", str(workers))
    charts = default_charts()

    def start(source, pages, options):
        started = ahead.start(source, pages, options)
        if made is not None:
            made.append(started)
        return started

    return dict(assemble_site(from_folder(folder), OPTIONS, replace(charts, ahead=start)))


@pytest.mark.slow
def test_pages_made_ahead_give_the_serial_site_byte_for_byte(folder, tmp_path, monkeypatch):
    serial_made, made = [], []
    serial = render(folder, tmp_path / "serial", 1, monkeypatch, serial_made)
    parallel = render(folder, tmp_path / "parallel", 2, monkeypatch, made)
    assert serial_made == [None]  # one process: nothing made ahead
    (started,) = made
    assert started is not None and started.made_ahead, "no page was made by a worker"
    assert None in started.made_ahead  # the index is the last page: a worker's first
    assert all(not w.is_alive() for w in started.workers)
    assert parallel == serial
    assert any(name.endswith(".svg") for name in parallel)

    # The cache now remembers the whole site: rendering it again starts no worker.
    again = []
    assert render(folder, tmp_path / "parallel", 2, monkeypatch, again) == serial
    assert again == [None]


@pytest.fixture
def two(tmp_path, monkeypatch):
    """An empty cache and two working processes (this one and one worker)."""
    monkeypatch.setenv("ATTNREPORT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("ATTNREPORT_IMAGE_WORKERS", "2")


def start_all(source):
    """Workers started on every page of ``source`` (the index last), and those pages."""
    pages = [*range(source.count), None]
    started = ahead.start(source, pages, OPTIONS)
    assert started is not None
    return started, pages


def test_a_page_whose_worker_failed_is_made_here(folder, tmp_path, two):
    """Workers given a folder they cannot read fail every page they take; the assembling
    process then makes those pages itself, and the site is whole."""
    started, pages = start_all(replace(from_folder(folder), folder=tmp_path / "missing"))
    for page in pages:
        assert started.claim(page) is False  # a failed page is this process's to make
    started.close()
    assert started.made_ahead == []
    assert all(state == ahead.HERE for state in started.state[:])


def test_a_dead_worker_leaves_its_page_here(folder, two):
    started, pages = start_all(from_folder(folder))
    (worker,) = started.workers
    worker.kill()
    worker.join()
    with started.changed:  # as if it had died while making the last page
        started.state[len(pages) - 1] = 1
    assert started.claim(None) is False
    started.close()


def test_nothing_is_made_ahead_for_results_in_memory_or_one_core(folder, two, monkeypatch):
    source = from_folder(folder)
    pages = [*range(source.count), None]
    assert ahead.start(replace(source, folder=None), pages, OPTIONS) is None
    assert ahead.start(source, pages[: ahead.MIN_PAGES - 1], OPTIONS) is None
    with monkeypatch.context() as patch:
        patch.setattr(ahead.multiprocessing.current_process(), "daemon", True)
        assert ahead.start(source, pages, OPTIONS) is None  # a daemon may not start any
    monkeypatch.setenv("ATTNREPORT_IMAGE_WORKERS", "1")
    assert ahead.start(source, pages, OPTIONS) is None


def test_a_failed_assembly_stops_the_workers(folder, two):
    source = from_folder(folder)
    started, _ = start_all(source)
    started.close(finished=False)
    assert all(not w.is_alive() for w in started.workers)
    assert all(state != ahead.FREE for state in started.state[:])
    again, _ = start_all(source)  # not remembered as made
    again.close(finished=False)
