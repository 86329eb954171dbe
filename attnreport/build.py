"""``attnreport build`` and ``analyze`` as library calls: config in, files on disk out.

Stages report progress through a ``Progress`` callback so the CLI can draw it and the
benchmark can time it; nothing here prints.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from attnreport.config import Config
from attnreport.errors import AttnReportError
from attnreport.session import Session, open_session
from attnreport.study import Settings, StudyResults, run_study

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


def settings_of(config: Config) -> Settings:
    return Settings(
        breakdown_ranks=config.breakdown_ranks,
        epsilons=config.epsilons,
        intervene_layer=config.intervene_layer,
        scaling_sentence=config.scaling_sentence,
        mean_sentences=config.mean_sentences,
        map_tokens=config.map_tokens,
        view_head=config.view_head,
    )


def check_output(out: Path, inputs: list[Path], force: bool) -> None:
    """Refuse a bad output folder before any work: what the writer would refuse (a file,
    a foreign folder without ``force``), one that holds an input (the swap would remove
    it), and the file system root or the home folder."""
    from attnreport.site.write import check_target

    check_target(out, force)
    out = out.expanduser().resolve()
    for source in inputs:
        source = source.expanduser().resolve()
        if source == out or out in source.parents:
            raise AttnReportError(
                f"output folder {out} contains the input {source}; choose another --out"
            )
    if out == Path.home().resolve() or out == Path(out.anchor):
        raise AttnReportError(
            f"refusing to use {out} as the output folder; choose a folder of its own"
        )


def input_paths(config: Config) -> list[Path]:
    paths = [Path(config.sentences)] if config.sentences else []
    model = Path(config.model).expanduser()
    return paths + ([model] if config.model != "default" and model.exists() else [])


def study(
    config: Config, progress: Progress = _quiet, timings: Timings | None = None
) -> tuple[Session, StudyResults]:
    """Load the model, capture and analyse every sentence, run the interventions."""
    timings = timings or Timings()
    start = time.perf_counter()
    progress("load", 0, 1)
    session = open_session(
        config.model, config.sentences, config.dtype, config.device, config.truncate, config.bos
    )
    start = timings.add("load", start)
    total = len(session.sentences)
    done = {"capture": 0}

    def step(stage: str) -> None:
        nonlocal start
        if stage == "capture":
            done["capture"] += 1
            progress("capture", done["capture"], total)
            start = timings.add("capture", start)
            if done["capture"] == total:
                progress("interventions", 0, 1)
        else:
            start = timings.add(stage, start)

    progress("capture", 0, total)
    results = run_study(session, settings_of(config), step)
    return session, results


@dataclass(frozen=True)
class BuildSummary:
    out: Path
    pages: int
    figures: int
    files: int
    bytes: int
    timings: Timings


def build_site(config: Config, force: bool, progress: Progress = _quiet) -> BuildSummary:
    """Run the study and write the site to ``config.out`` (replacing it only when complete)."""
    from attnreport.site.assemble import assemble_site
    from attnreport.site.context import SiteOptions, date_from_env
    from attnreport.site.write import write_site

    out = Path(config.out)
    check_output(out, input_paths(config), force)
    timings = Timings()
    _, results = study(config, progress, timings)
    start = time.perf_counter()
    progress("site", 0, 1)
    options = SiteOptions(
        title=config.title,
        date=config.date or date_from_env(),
        authors=config.authors,
        images=config.images,
    )
    files = assemble_site(results, options)
    start = timings.add("charts and pages", start)
    progress("write", 0, 1)
    write_site(files, out, force=force)
    timings.add("write", start)
    pages = [name for name in files if name.endswith(".html") and name != "404.html"]
    figures = sum(
        content.count(b'class="ar-chart"') for name, content in files.items() if name in pages
    )
    return BuildSummary(
        out, len(pages), figures, len(files), sum(map(len, files.values())), timings
    )


def write_results(config: Config, force: bool, progress: Progress = _quiet) -> tuple[Path, int]:
    """Run the study and write the results directory (``docs/results-schema.md``)."""
    from attnreport.site.write import MARKER, write_site

    out = Path(config.out)
    check_output(out, input_paths(config), force)
    _, results = study(config, progress)
    files = results.files()
    files[MARKER] = b"attnreport results\n"
    progress("write", 0, 1)
    write_site(files, out, force=force)
    return out, len(files)
