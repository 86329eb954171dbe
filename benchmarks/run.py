"""``python -m benchmarks`` (or ``python benchmarks/run.py``): measure attnreport on this
machine and write BENCHMARKS.md. Run from the repository root; the benchmarks are not
part of the package and are not shipped in the wheel.

Nothing here is a timed test: the script measures, and the file it writes records what
was measured, on which machine, and the command that reproduces it. ``--quick`` runs
every section on small inputs (two short sentences, one length each, no targets judged)
so ``tests/test_bench.py`` can keep the script from rotting. Scratch files (built sites,
model caches) go to a temporary folder removed at the end, or to ``--workdir``.

Sections: 1 capture + focus vs the model's pass, 2 interventions, 3 model load,
4 example build, 4b analyze vs build vs render, 4c serve --watch, 5 sequence-length scaling, 6 page weight
and render time, 7 bertviz, 8 site weight against the budgets, 9 the peers (plain pass,
eager attentions, TransformerLens, bertviz) at 32-8192 tokens, 10 the study's extra passes;
then a pyinstrument profile of the slowest warm-build stage (when pyinstrument is there).
TransformerLens and bertviz run from a throwaway venv the bench makes outside the
repository (``benchmarks.peers``), never from the project's environment.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if __package__ in (None, ""):  # run as a script: import the repository, not this folder
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

from benchmarks.report import Section, kept_notes, render  # noqa: E402

if TYPE_CHECKING:  # the sections import torch and transformers: only once a run starts,
    from benchmarks import sections  # so that --help answers in a fraction of the time

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO / "BENCHMARKS.md"
QUICK_SENTENCES = ("The harbour town woke slowly on winter mornings", "def add(a, b): return a + b")
FULL_SCALING = (16, 64, 256, 1024)
FULL_PAGES = (8, 60, 512)
# The keys of sections.TITLES, here so that --help answers without importing torch.
SECTION_NAMES = (
    "capture", "interventions", "load", "build", "rebuild", "watch", "scaling", "pages",
    "bertviz", "weight", "peers", "extra passes",
)  # fmt: skip


@dataclass(frozen=True)
class Options:
    quick: bool
    out: Path
    repeats: int
    bertviz_python: str | None  # None: the peers venv's
    profile: bool
    workdir: Path | None  # None: a temporary folder, removed at the end
    peers_venv: Path | None = None  # None: benchmarks.peers.PEERS_VENV
    only: tuple[str, ...] = ()  # section names to run (empty: all)
    model: str = "default"  # what --model names (attnreport's own model names)


def parse_args(argv: list[str] | None = None) -> Options:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--quick", action="store_true", help="small inputs, no targets judged")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="Markdown file to write")
    parser.add_argument("--repeats", type=int, default=None, help="timed repeats (5; quick: 1)")
    parser.add_argument(
        "--bertviz-python", default=None, help="a Python with bertviz (default: the peers venv's)"
    )
    parser.add_argument(
        "--peers-venv",
        type=Path,
        default=None,
        help="throwaway venv for TransformerLens and bertviz, made when missing "
        "(default: ~/.cache/attnreport-bench/peers-venv)",
    )
    parser.add_argument(
        "--only",
        default="",
        help="comma-separated sections to run, e.g. peers,extra-passes (default: all)",
    )
    parser.add_argument(
        "--model",
        default="default",
        help="the model measured, as attnreport's --model names it (default: the embedded "
        "default model); outside quick mode the example builds (sections 4-4c) keep the "
        "example's own attnreport.toml",
    )
    parser.add_argument("--no-profile", action="store_true", help="skip the pyinstrument profile")
    parser.add_argument(
        "--workdir",
        type=Path,
        default=None,
        help="scratch folder to keep (default: a temporary one)",
    )
    args = parser.parse_args(argv)
    repeats = args.repeats or (1 if args.quick else 5)
    only = tuple(name.strip().replace("-", " ") for name in args.only.split(",") if name.strip())
    unknown = [name for name in only if name not in SECTION_NAMES]
    if unknown:
        parser.error(f"unknown section {unknown[0]!r} (one of: {', '.join(SECTION_NAMES)})")
    return Options(
        args.quick,
        args.out,
        repeats,
        args.bertviz_python,
        not args.no_profile and not args.quick,
        args.workdir,
        args.peers_venv,
        only,
        args.model,
    )


def machine_section(info: dict[str, str], started: float) -> Section:
    """Where and when it ran: CPU, cores, RAM, versions, load before and after."""
    section = Section("Machine")
    end_load = " / ".join(f"{v:.2f}" for v in os.getloadavg())
    rows = [*info.items(), ("Load average at end (1/5/15 min)", end_load)]
    rows.append(("Bench wall time", f"{time.perf_counter() - started:.0f} s"))
    section.table(("", ""), rows)
    section.add(
        "Timings are wall-clock on a shared machine; a load average above the core count means "
        "other processes competed for the CPU during the run, which inflates every time here.",
        "",
    )
    return section


def reproduce_section(options: Options) -> Section:
    """The command that wrote this file, and what the bench installs (only into its own venv)."""
    from benchmarks.peers import PEER_REQUIREMENTS, PEERS_VENV

    section = Section("Reproduce")
    command = shlex.join(["python", "-m", "benchmarks", *sys.argv[1:]]) if sys.argv[1:] else ""
    venv = options.peers_venv or PEERS_VENV
    section.add(
        "```sh",
        "make bench                       # = python -m benchmarks (writes BENCHMARKS.md)",
        "python -m benchmarks --only peers,extra-passes --out peers.md   # sections 9 and 10 alone",
        "python -m benchmarks --quick --out bench-quick.md   # small smoke run (tests/test_bench.py: on a tiny model)",
        "python -m benchmarks --model gemma-3-270m --only capture,peers --out gemma.md   # another model",
        "# optional, for the Profile section (local venv only):",
        "pip install pyinstrument",
        "```",
        "",
        f"TransformerLens and bertviz (sections 7 and 9) run from a throwaway venv the bench makes "
        f"when it is missing, `{venv}` (`--peers-venv`): `python -m venv`, torch pinned by "
        "`constraints.txt` (from PyTorch's CPU index where there is no GPU, as `make setup` "
        "installs it), then "
        f"`pip install -c constraints.txt {' '.join(PEER_REQUIREMENTS)}`. Nothing is installed "
        "into the project's environment; delete the folder to start again.",
        "",
        f"This file: `{command or 'python -m benchmarks'}` ({'quick' if options.quick else 'full'} "
        f"mode, {options.repeats} timed repeats, bertviz Python: "
        f"`{options.bertviz_python or 'the peers venv'}`).",
        "",
    )
    return section


@contextmanager
def environment(name: str, value: str):
    """Set an environment variable for the block, then restore it."""
    old = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old


def _quick_sentences(work: Path) -> Path:
    path = work / "quick-sentences.txt"
    path.write_text("".join(s + "\n" for s in QUICK_SENTENCES), encoding="utf-8")
    return path


Log = Callable[[str], None]


def _quiet(_message: str) -> None:
    return None


def section_plan(ctx: sections.Context) -> list[tuple[str, Callable[[], Section]]]:
    """(name, call) for sections 1-7 in order; lengths shrink in quick mode."""
    from benchmarks import pages, peers, rebuild, sections, watch, weight

    quick = ctx.quick
    page_lengths = (len(ctx.loaded().sentences[0].token_ids),) if quick else FULL_PAGES
    return [
        ("capture", lambda: sections.capture_section(ctx)),
        ("interventions", lambda: sections.interventions_section(ctx)),
        ("load", lambda: sections.load_section(ctx)),
        ("build", lambda: sections.build_section(ctx)),
        ("rebuild", lambda: rebuild.rebuild_section(ctx)),
        ("watch", lambda: watch.watch_section(ctx)),
        ("scaling", lambda: sections.scaling_section(ctx, (16,) if quick else FULL_SCALING)),
        ("pages", lambda: pages.pages_section(ctx, page_lengths)),
        ("bertviz", lambda: pages.bertviz_section(ctx, page_lengths[0 if quick else 1])),
        ("weight", lambda: weight.weight_section(ctx)),
        ("peers", lambda: peers.peers_section(ctx)),
        ("extra passes", lambda: peers.extra_passes_section(ctx)),
    ]


def run_sections(
    ctx: sections.Context, log: Log, only: tuple[str, ...] = ()
) -> tuple[list[Section], list[str]]:
    """Every section (or those named in ``only``); one that raises is written as failed
    and named in the second list."""
    from benchmarks.sections import TITLES

    done, failed = [], []
    for name, call in section_plan(ctx):
        if only and name not in only:
            continue
        log(f"bench: {TITLES[name]} ...")
        start = time.perf_counter()
        try:
            done.append(call())
        except Exception as err:  # a broken section must not lose the others' numbers
            failed.append(name)
            section = Section(TITLES[name])
            section.add(f"**Failed**: `{type(err).__name__}: {err}`", "")
            done.append(section)
        log(f"bench:   {time.perf_counter() - start:.0f} s")
    return done, failed


def profile(ctx: sections.Context, options: Options, log: Log) -> Section:
    """The Profile section, on the warm cache section 4 left behind."""
    from attnreport.config import load_settings
    from benchmarks.profiling import profile_section
    from benchmarks.sections import EXAMPLE_CONFIG

    log("bench: profile ...")
    settings = load_settings(EXAMPLE_CONFIG, {"out": str(ctx.work / "site-profile")})
    cache = ctx.work / ("cache-build" if not ctx.quick else "unused")
    with environment("ATTNREPORT_CACHE", str(cache)):
        return profile_section(ctx.warm_stages, settings, options.profile)


INTRO = (
    "Written by `python -m benchmarks` from one run on the machine below; every number "
    "is a measurement of that run, not a target or an estimate. Targets are the project's; "
    "the summary says which were met. Do not edit above the marker at the end: regenerate.",
)


def left_out_section(only: tuple[str, ...]) -> Section:
    """Which sections a run with ``--only`` did not measure (so the file says it)."""
    from benchmarks.sections import TITLES

    section = Section("Sections not run")
    names = ",".join(name.replace(" ", "-") for name in only)
    section.add(
        f"This file was written with `--only {names}`: the sections below were not measured "
        "in this run, so neither their tables nor their targets are here (`make bench` runs "
        "them all; the Profile section needs section 4's warm build).",
        "",
    )
    section.add(*(f"- {title}" for name, title in TITLES.items() if name not in only), "")
    return section


@contextmanager
def scratch(workdir: Path | None) -> Iterator[Path]:
    """``workdir`` (created, kept afterwards) or a temporary folder removed at the end."""
    if workdir is not None:
        workdir.mkdir(parents=True, exist_ok=True)
        yield workdir
        return
    with tempfile.TemporaryDirectory(prefix="attnreport-bench-") as tmp:
        yield Path(tmp)


def run_bench(options: Options, log: Log = _quiet) -> tuple[str, list[str]]:
    """Measure everything; the Markdown text and the names of sections that failed."""
    from benchmarks import sections
    from benchmarks.inputs import machine_info

    started = time.perf_counter()
    info = {**machine_info(), "Model measured (`--model`)": options.model}
    with scratch(options.workdir) as work:
        ctx = sections.Context(
            quick=options.quick,
            repeats=options.repeats,
            work=work,
            sentences_file=_quick_sentences(work) if options.quick else None,
            bertviz_python=options.bertviz_python,
            peers_venv=options.peers_venv,
            log=log,
            model=options.model,
        )
        measured, failed = run_sections(ctx, log, options.only)
        if not options.only:  # the profile redoes section 4's warm build
            measured.append(profile(ctx, options, log))
    title = "Benchmarks" + (" (quick mode)" if options.quick else "")
    body = [machine_section(info, started), *measured]
    if options.only:
        body.append(left_out_section(options.only))
    body.append(reproduce_section(options))
    return render(title, INTRO, body, kept_notes(options.out), options.quick), failed


def main(argv: list[str] | None = None) -> int:
    """Run the bench, write ``--out``; exit status 1 when a section failed."""
    options = parse_args(argv)
    text, failed = run_bench(
        options, log=lambda message: print(message, file=sys.stderr, flush=True)
    )
    options.out.write_text(text, encoding="utf-8")
    print(f"wrote {options.out}" + (f"; failed sections: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
