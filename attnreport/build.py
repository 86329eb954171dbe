"""``attnreport build`` and ``analyze`` as library calls: settings in, files on disk out.

Stages report progress through a ``Progress`` callback so the CLI can draw it and the
benchmark can time it; nothing here prints.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attnreport.config import Settings
from attnreport.dates import analysis_date, check_report_date
from attnreport.errors import AttnReportError
from attnreport.output import check_output, input_paths
from attnreport.results import Results
from attnreport.results.io import parse_files, results_files
from attnreport.session import Session, session_for

if TYPE_CHECKING:  # analyze imports no chart or template code
    from attnreport.site.context import SiteOptions

Progress = Callable[[str, int, int], None]  # (stage, done, total)


def _quiet(_stage: str, _done: int, _total: int) -> None:
    return None


@dataclass
class Timings:
    """Seconds per stage, in the order the stages ran."""

    seconds: dict[str, float] = field(default_factory=dict)

    def add(self, stage: str, since: float) -> float:
        now = time.perf_counter()
        self.seconds[stage] = self.seconds.get(stage, 0.0) + now - since
        return now


def study(
    settings: Settings,
    progress: Progress = _quiet,
    timings: Timings | None = None,
    session: Session | None = None,
) -> tuple[Session, Results]:
    """The results of ``settings`` in memory, made by the one pipeline (``study_files``),
    typed (for library callers, benchmarks and tests). ``session``: a model already
    loaded with these settings' sentences."""
    session, files = study_files(settings, progress, timings, session)
    return session, parse_files(files)


def study_files(
    settings: Settings,
    progress: Progress = _quiet,
    timings: Timings | None = None,
    session: Session | None = None,
) -> tuple[Session, dict[str, bytes]]:
    """The results files of ``settings`` (``{relative path: bytes}``, as ``analyze --out``
    writes them, less its resume state), made by the one pipeline: ``run_corpus`` into a
    temporary folder, read back (``results_files``) and the folder removed. ``session``: a
    model already loaded, or held by the caller (the Python API), with these sentences."""
    import tempfile

    from attnreport.corpus import run_corpus

    clock = StageClock(progress, timings if timings is not None else Timings())
    clock("load", 0, 1)
    session = session or session_for(settings)
    with tempfile.TemporaryDirectory(prefix="attnreport-study-") as folder:
        run_corpus(replace(settings, out=folder), force=True, progress=clock, session=session)
        clock.stop()
        return session, results_files(folder)


@dataclass(frozen=True)
class BuildSummary:
    out: Path
    pages: int
    figures: int
    files: int
    bytes: int
    timings: Timings


def site_options(settings: Settings) -> SiteOptions:
    """What the pages say that is not in the results: title, date, authors, images, pages."""
    from attnreport.sentences import sentence_notes
    from attnreport.site.context import SiteOptions  # analyze draws nothing

    return SiteOptions(
        title=settings.title,
        date=settings.date,  # else the analysis date (pages.page_meta)
        authors=settings.authors,
        images=settings.images,
        png=settings.png,
        png_scale=settings.png_scale,
        notes=tuple(sentence_notes(settings.sentences).items()),
        pages=settings.pages,
        lede=settings.lede,
        afterword=settings.afterword,
    )


class StageClock:
    """A ``Progress`` that passes every report on and adds the seconds between stage
    changes to ``timings`` (a stage's time runs until the next stage reports)."""

    def __init__(self, progress: Progress, timings: Timings) -> None:
        self.progress, self.timings = progress, timings
        self.stage: str | None = None
        self.since = time.perf_counter()

    def __call__(self, stage: str, done: int, total: int) -> None:
        if ":" in stage:  # progress within a stage ("capture:layers"): not a stage of its own
            self.progress(stage, done, total)
            return
        if stage != self.stage:
            self.stop()
            self.stage = stage
        self.progress(stage, done, total)

    def stop(self) -> None:
        if self.stage is not None:
            self.since = self.timings.add(self.stage, self.since)
        self.stage = None


def results_folder(out: Path) -> Path:
    """A new empty folder beside ``out`` for the results of a build (the site writer
    removes it after a crash: it is named like its own temporary folders)."""
    import secrets

    from attnreport.output import TMP_PREFIX

    parent = out.expanduser().absolute().parent
    folder = parent / f"{TMP_PREFIX}new-{os.getpid()}-{secrets.token_hex(6)}"
    try:
        folder.mkdir(parents=True)
    except OSError as err:
        raise AttnReportError(
            f"cannot write the site to {out}: {err.strerror or err}; choose a folder you can write to"
        ) from err
    return folder


def build_site(
    settings: Settings, force: bool, progress: Progress = _quiet, rebuild: str | None = None
) -> BuildSummary:
    """``analyze`` + ``render``: analyse every sentence into a results folder beside
    ``settings.out`` (written sentence by sentence, as ``analyze`` does), then draw the
    site from it, loading only the sentences that get a page; memory stays flat in the
    number of sentences. The results folder is removed afterwards (the site ships its
    files in ``results/``). ``rebuild``: the command line the About section shows."""
    from attnreport.corpus import run_corpus
    from attnreport.site.assemble import assemble_site
    from attnreport.site.source import from_folder

    def analyse(scratch: Settings, clock: StageClock) -> Path:
        run_corpus(scratch, progress=clock)
        return Path(scratch.out)

    def draw(folder: Path, options: SiteOptions) -> Mapping[str, bytes]:
        return assemble_site(from_folder(folder), options)

    return built(settings, force, progress, rebuild, input_paths(settings), analyse, draw)


def built(
    settings: Settings,
    force: bool,
    progress: Progress,
    rebuild: str | None,
    inputs: list[Path],
    analyse: Callable[[Settings, StageClock], Any],
    draw: Callable[[Any, SiteOptions], Mapping[str, bytes]],
) -> BuildSummary:
    """The frame of every build: refuse a bad output or ``--pages`` before any model loads
    (the command line checked these and more before: ``checks.check_run``),
    ``analyse`` into a results folder beside ``settings.out`` (``scratch.out``), ``draw``
    the site's files from what it returns, write them, and remove the results folder
    (the site ships its own copy in ``results/``). ``inputs``: the user's files the
    output must not replace."""
    import shutil

    from attnreport.output import write_site
    from attnreport.page_choice import page_indices, parse_pages
    from attnreport.publish import summarize
    from attnreport.sentences import read_sentences
    from attnreport.usercache import prune

    out = Path(settings.out)
    check_output(out, inputs, force)
    page_indices(parse_pages(settings.pages), len(read_sentences(settings.sentences)))
    check_report_date(settings.date, analysis_date())  # the analysis runs today
    options = replace(site_options(settings), rebuild=rebuild)
    timings = Timings()
    clock = StageClock(progress, timings)
    folder = results_folder(out)
    try:
        analysed = analyse(replace(settings, out=str(folder)), clock)
        clock("site", 0, 1)
        files = draw(analysed, options)
        clock("write", 0, 1)
        written = write_site(files, out, force=force)
        prune()
        clock.stop()
        summary = summarize(written, files)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return BuildSummary(out, summary.pages, summary.figures, summary.files, summary.bytes, timings)
