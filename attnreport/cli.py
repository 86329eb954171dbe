"""The ``attnreport`` command line: a thin click layer over the library.

Every command turns an ``AttnReportError`` into one line on stderr and exit code 1,
and Ctrl-C into exit code 130, never a traceback.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import Any

import click

from attnreport import __version__
from attnreport.checks import check_run
from attnreport.cli_options import (
    CONFIG,
    FORCE,
    IMAGES,
    PAGES,
    PNG,
    PNG_SCALE,
    RESULTS_OUT,
    SITE_OUT,
    corpus_options,
    model_options,
    needs_analysis,
    png_scale_option,
    rebuild_command,
    settings_from,
    study_options,
    user_errors,
)
from attnreport.config import Settings, SettingValues, default_of
from attnreport.errors import AttnReportError


def quiet_libraries() -> None:
    """Keep transformers' progress bars and advice out of the report's output; its GGUF
    reader draws a tqdm bar of its own, which only tqdm's environment switch turns off
    (read when tqdm is first imported, so set before transformers)."""
    os.environ.setdefault("TQDM_DISABLE", "1")
    import transformers

    transformers.utils.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()


def checked(settings: Settings, force: bool, out: bool = True) -> Settings:
    """``settings`` once every check that needs no model passed (``checks.check_run``:
    one line within a second or two, before torch is imported), with the libraries that
    load the model then imported and quietened."""
    check_run(settings, force, out)
    quiet_libraries()
    return settings


class _WarningsToStderr(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        click.echo(f"{record.levelname.lower()}: {record.getMessage()}", err=True)


@click.group()
@click.version_option(__version__, prog_name="attnreport")
def main() -> None:
    """Capture a causal LM's attention exactly and publish it as a static report."""
    logger = logging.getLogger("attnreport")
    if not any(isinstance(h, _WarningsToStderr) for h in logger.handlers):  # one per process
        logger.addHandler(_WarningsToStderr(level=logging.WARNING))
    logger.setLevel(logging.WARNING)


@main.command()
@model_options
@CONFIG
@click.pass_context
@user_errors
@needs_analysis
def verify(ctx: click.Context, **_settings: Any) -> None:
    """Check that the captured numbers are the model's own; exit 0 only if all checks pass.

    Prints, per check, the largest error over all layers, heads and sentences and the
    tolerance it must stay within, derived from the model's dtype (its machine epsilon)
    and the magnitudes compared, with the numbers it was derived from.
    """
    settings = settings_from(ctx)
    if len(settings.model_names()) > 1:
        raise AttnReportError("verify checks one model at a time: run it once per --model")
    checked(settings, force=False, out=False)
    from attnreport.session import session_for
    from attnreport.verification import verify_sentences

    session = session_for(settings)
    checks = verify_sentences(session.model, session.specs, session.token_tensors())
    for check in checks:
        status = "ok  " if check.passed else "FAIL"
        click.echo(
            f"{status} {check.name}: max error {check.max_error:.3g}, tolerance {check.rule}"
        )
    failed = [c for c in checks if not c.passed]
    if failed:
        click.echo(f"{len(failed)} of {len(checks)} checks failed", err=True)
        sys.exit(1)
    click.echo(f"all {len(checks)} checks passed on {len(session.sentences)} sentence(s)")


@main.command()
@model_options
@SITE_OUT
@IMAGES
@PNG
@PNG_SCALE
@PAGES
@study_options
@click.pass_context
@user_errors
@needs_analysis
def build(ctx: click.Context, force: bool, **_settings: Any) -> None:
    """Run the whole study and write the report as a static site.

    The new site is built beside the output folder and swapped in only when complete,
    so a failed or interrupted build leaves the previous site whole.
    """
    from attnreport.dates import analysis_date, check_report_date

    settings = settings_from(ctx)
    check_report_date(settings.date, analysis_date())  # first: the analysis runs today
    settings = checked(settings, force)
    from attnreport.build import build_site
    from attnreport.corpus.plain_progress import progress_display

    build = build_site
    if len(settings.model_names()) > 1:
        from attnreport.build_several import build_models as build
    with progress_display() as progress:
        summary = build(settings, force, progress, rebuild_command(ctx))
    seconds = sum(summary.timings.seconds.values())
    click.echo(
        f"built {summary.pages} page(s) with {summary.figures} figure(s), {summary.files} files ({summary.bytes / 1e6:.1f} MB) in {seconds:.1f} s"
    )
    click.echo(f"open {summary.out / 'index.html'}  (or: attnreport serve {summary.out})")


@main.command()
@model_options
@RESULTS_OUT
@PAGES
@corpus_options
@study_options
@click.pass_context
@user_errors
@needs_analysis
def analyze(
    ctx: click.Context,
    force: bool,
    resume: bool,
    engine: str,
    ray_address: str | None,
    workers: int | None,
    **_settings: Any,
) -> None:
    """Run the study and write its results as gzip-compressed JSON tables plus a manifest.

    Each sentence's results are written as soon as it is finished, so a run over a large
    corpus that is interrupted continues with --resume.
    """
    settings = checked(settings_from(ctx), force)
    from attnreport.corpus import CorpusOptions, run_corpus
    from attnreport.corpus.plain_progress import progress_display

    options = CorpusOptions(engine, resume, ray_address, workers)
    if len(settings.model_names()) > 1:
        from attnreport.build_several import analyze_models

        with progress_display() as progress:
            folders = analyze_models(settings, options, force, progress)
        click.echo(f"wrote the results of {len(folders)} models to {settings.out}")
        return
    try:
        with progress_display() as progress:
            summary = run_corpus(settings, options, force, progress)
    except KeyboardInterrupt:
        click.echo(
            f"interrupted; finished sentences are kept in {settings.out}: rerun with --resume",
            err=True,
        )
        sys.exit(130)
    resumed = f" ({summary.resumed} from an earlier run)" if summary.resumed else ""
    click.echo(
        f"wrote {summary.files} files for {summary.sentences} sentence(s){resumed} to {summary.out}"
    )


@main.command()
@click.argument("results_dirs", nargs=-1, required=True, type=click.Path(file_okay=False))
@click.option("--out", required=True, help="Output folder for the site.")
@click.option(
    "--config",
    "config_file",
    type=click.Path(dir_okay=False),
    default=None,
    help="Settings file whose title, authors, date, images, png and pages to use "
    "(default: ./attnreport.toml when present, for results without stored options).",
)
@click.option("--title", default=None, help="Site title (overrides the config file).")
@click.option("--no-images", is_flag=True, help="Skip the static images of every figure (faster).")
@click.option(
    "--png/--no-png",
    default=None,
    help="Also write (or not) a static PNG of every figure [default: as the site was built].",
)
@png_scale_option(None)
@PAGES
@FORCE
@click.pass_context
@user_errors
def render(
    ctx: click.Context,
    results_dirs: tuple[str, ...],
    out: str,
    config_file: str | None,
    title: str | None,
    no_images: bool,
    png: bool | None,
    png_scale: float | None,
    pages: str | None,
    force: bool,
) -> None:
    """Draw the site from a results folder (``analyze --out`` or a site's ``results/``).

    Several folders (or one that lists several: ``analyze`` of several models, a
    comparison site's ``results/``) draw one site that compares the models. Needs no model and imports neither torch nor transformers. Results from ``analyze``
    take their title, authors, date, images, png and pages from --config, else from
    ./attnreport.toml when present, as ``build`` does. Without --config, a site's own
    results folder renders with the options it was built with, so ``render SITE/results``
    reproduces SITE byte for byte (its pages included).
    """
    from attnreport.config import page_choice
    from attnreport.multi.folders import results_folders
    from attnreport.publish import merged_options, stored_options
    from attnreport.publish_several import render_folders

    results_dir = results_dirs[0]
    problem = page_choice("pages", pages) if pages is not None else None
    if problem:
        raise AttnReportError(problem)
    base = stored_options(results_dir)
    if config_file is None and base is None and Path("attnreport.toml").is_file():
        config_file = "attnreport.toml"
    values: SettingValues = {
        "title": title,
        "images": False if no_images else None,
        "png": png,
        "png_scale": png_scale,
        "pages": pages,
    }
    if config_file is not None:
        from attnreport.config import load_settings
        from attnreport.sentences import sentence_notes

        config = load_settings(config_file)
        values = {
            "title": title or config.title,
            "authors": config.authors,
            "date": config.date,  # else the analysis date (pages.page_meta)
            "images": False if no_images else config.images,
            "png": config.png if png is None else png,
            "png_scale": config.png_scale if png_scale is None else png_scale,
            "pages": pages or config.pages,
            "lede": config.lede,
            "afterword": config.afterword,
            "rebuild": rebuild_command(ctx) if base is None else None,
            "notes": tuple(sentence_notes(config.sentences).items()),
        }
    folders = results_folders(results_dirs)
    summary = render_folders(folders, out, merged_options(base, **values), force)
    click.echo(
        f"rendered {summary.pages} page(s) with {summary.figures} figure(s), {summary.files} files ({summary.bytes / 1e6:.1f} MB)"
    )
    click.echo(f"open {summary.out / 'index.html'}  (or: attnreport serve {summary.out})")


@main.command()
@click.argument("expected", type=click.Path(file_okay=False))
@click.argument("actual", type=click.Path(file_okay=False))
@click.option(
    "--rtol", type=float, default=default_of("rtol"), show_default=True, help="Relative tolerance."
)
@click.option(
    "--atol", type=float, default=default_of("atol"), show_default=True, help="Absolute tolerance."
)
@CONFIG
@click.pass_context
@user_errors
def compare(ctx: click.Context, expected: str, actual: str, **_settings: Any) -> None:
    """Compare two results folders within a tolerance; exit 1 if any number moved more.

    Discrete statistics (top keys, ranks, focus fractions) may differ where the top two
    scores are within the tolerance: such near-ties are listed, not counted as failures.
    The tolerances come from --rtol/--atol, else the settings file (rtol, atol). The
    attention maps, whose scores the results keep at 3 decimals, are compared within at
    least atol 0.0015 and rtol 0.002 (a score may round the other way in another run).
    """
    from attnreport.multi.folders import results_folders
    from attnreport.results import load
    from attnreport.results.compare import Tolerance, compare_results
    from attnreport.results.ties import map_tolerance_words

    settings = settings_from(ctx)
    rtol, atol = settings.rtol, settings.atol
    pairs = list(zip(results_folders([expected]), results_folders([actual]), strict=False))
    if len(results_folders([expected])) != len(results_folders([actual])):
        raise AttnReportError(f"{expected} and {actual} hold the results of different numbers of models")  # fmt: skip
    problems = 0
    for want, got in pairs:
        result = compare_results(load(want), load(got), Tolerance(rtol, atol))
        where = f"{got.name}: " if len(pairs) > 1 else ""
        for line in result.near_ties:
            click.echo(f"near-tie: {where}{line}")
        for line in result.problems:
            click.echo(f"moved: {where}{line}", err=True)
        problems += len(result.problems)
    maps = map_tolerance_words(Tolerance(rtol, atol))
    if problems:
        raise AttnReportError(
            f"{problems} difference(s) beyond rtol {rtol}, atol {atol} ({maps}) between "
            f"{expected} and {actual}"
        )
    click.echo(f"{expected} and {actual} agree within rtol {rtol}, atol {atol} ({maps})")


@main.command()
@click.option(
    "--dir",
    "directory",
    default=".",
    type=click.Path(file_okay=False),
    help="Where to write the starter files.",
)
@click.option(
    "--workflow",
    type=click.Choice(["build", "render"]),
    default="build",
    show_default=True,
    help="GitHub Pages workflow: build (runs the study on CPU) or render (draws committed results/, no torch).",
)
@click.option("--no-workflow", is_flag=True, help="Write no GitHub Actions workflow.")
@click.option(
    "--source",
    default=None,
    help="Where the workflow pip-installs attnreport from: a version or a URL "
    "(git+https://...@TAG). Default: where this attnreport was installed from.",
)
@click.option(
    "--author",
    "authors",
    multiple=True,
    help="An author of the report, for its byline and citation (repeat for several). "
    "Default: asked at a terminal, else git's user.name, else none.",
)
@user_errors
def init(
    directory: str, workflow: str, no_workflow: bool, source: str | None, authors: tuple[str, ...]
) -> None:
    """Write a project: attnreport.toml, sentences.txt, .gitignore and a GitHub Pages
    workflow (.github/workflows/attnreport.yml) that installs attnreport from a source a
    runner reaches. Writes the files that are missing; never overwrites one."""
    from attnreport.origin import Origin, check_source, installed_origin
    from attnreport.project import project_files, write_project

    target = Path(directory)
    origin = None
    if not no_workflow:
        given = Origin(check_source(source), f"{source} (--source)") if source is not None else None
        origin = given or installed_origin()
    form = workflow if origin is not None and origin.source is not None else None
    authors = authors or _asked_authors(target)
    written, kept = write_project(target, project_files(form, origin and origin.source, authors))
    click.echo("wrote " + ", ".join(str(path) for path in written))
    if kept:
        click.echo("kept " + ", ".join(str(path) for path in kept) + " (already there)")
    if not authors:
        click.echo("no author set: name yourself in 'authors' in attnreport.toml")
    if origin is not None and origin.source is not None:
        click.echo(f"the workflow installs attnreport from {origin.said}")
    elif origin is not None:
        click.echo(
            f"warning: no workflow written: {origin.said}, so a GitHub runner could not install "
            f"it; to write one, run attnreport init --dir {target} --source VERSION_OR_URL "
            "(README: Publish your report)",
            err=True,
        )
    next_step = "attnreport analyze --out results" if workflow == "render" else "attnreport build"
    click.echo(f"next: {next_step}; then push to GitHub to publish (README: Publish your report)")


def _at_terminal() -> bool:
    return sys.stdin.isatty()


def _asked_authors(target: Path) -> tuple[str, ...]:
    """The report's author: asked at a terminal (git's user.name offered), else git's
    user.name, else none."""
    from attnreport.project import git_author

    known = git_author(target) or ""
    if _at_terminal():
        known = click.prompt(
            "Author of the report (empty: none)", default=known, show_default=bool(known)
        )
    return (known.strip(),) if known.strip() else ()


@main.command()
@click.argument("directory", required=False, type=click.Path(file_okay=False))
@click.option(
    "--port", default=8000, show_default=True, help="Port to listen on (0: any free one)."
)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on; another than 127.0.0.1 lets other machines read the site.",
)
@click.option(
    "--watch",
    is_flag=True,
    help="Build the site, then rebuild it on every save of the sentences, settings or "
    "templates and reload the open pages.",
)
@CONFIG
@click.option(
    "--results",
    type=click.Path(file_okay=False),
    default=None,
    help="With --watch: results folder kept between saves (default: OUT-results beside the site).",
)
@user_errors
def serve(
    directory: str | None,
    port: int,
    host: str,
    watch: bool,
    config_file: str | None,
    results: str | None,
) -> None:
    """Preview a site on http://127.0.0.1:PORT; with --watch, build it and keep it current.

    DIRECTORY is the site (default: the settings file's out, else site). Only that
    folder is served. With --watch the model stays loaded: an edited sentence is
    analysed again alone and its pages are served at once, the intervention grids that
    read it following; an edited template or page setting only re-renders, and open
    pages reload (keeping their layer and head); a bad edit shows its error on the page
    while the last good site stays up. Ctrl-C stops.
    """
    if config_file is None and Path("attnreport.toml").is_file():
        config_file = "attnreport.toml"
    if watch:
        _serve_watch(directory, port, host, config_file, results)
        return
    if directory is None:
        from attnreport.config import load_settings

        directory = load_settings(config_file).out if config_file else "site"
    if not (Path(directory) / "index.html").is_file():
        raise AttnReportError(f"{directory} has no index.html; run attnreport build first")
    from attnreport.serve.server import make_server, stop

    server = _listening(lambda: make_server(Path(directory).resolve(), host, port, None), port)
    click.echo(f"serving {directory} on http://{host}:{server.server_address[1]}/ (Ctrl-C stops)")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        click.echo("stopped")
    finally:
        stop(server, None)


def _listening(make: Any, port: int) -> Any:
    """``make()``, a server, or one line saying why it cannot listen on ``port``."""
    try:
        return make()
    except OSError as err:
        raise AttnReportError(
            f"cannot listen on port {port}: {err.strerror or err}; try --port"
        ) from err


def _serve_watch(
    directory: str | None, port: int, host: str, config_file: str | None, results: str | None
) -> None:
    """``serve --watch``: see ``attnreport.serve.loop.watch_site``."""
    from attnreport.corpus.plain_progress import progress_display
    from attnreport.serve.loop import watch_site
    from attnreport.serve.project import Project
    from attnreport.serve.stopping import Stopper

    stopper = Stopper(lambda: click.echo("stopped; the site and its results are kept"))
    stopper.install()  # Ctrl-C and ``kill`` stop it, within a second or two
    given = {"out": directory} if directory is not None else {}
    config = Path(config_file) if config_file is not None else None
    try:
        project = Project(config, given, Path(results) if results is not None else None)
        quiet_libraries()

        def ready(url: str) -> None:
            click.echo(f"serving {project.site} on {url} (building; Ctrl-C stops)")

        def serve() -> None:
            report = lambda line: click.echo(line)  # noqa: E731
            watch_site(project, host, port, report, progress_display, ready)

        _listening(serve, port)
    except KeyboardInterrupt:
        stopper.stop()


if __name__ == "__main__":
    main()
