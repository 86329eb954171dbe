"""The ``attnreport`` command line: a thin click layer over the library.

Every command turns an ``AttnReportError`` into one line on stderr and exit code 1,
and Ctrl-C into exit code 130, never a traceback.
"""

from __future__ import annotations

import logging
import signal
import sys
from pathlib import Path
from typing import Any

import click

from attnreport import __version__
from attnreport.cli_options import (
    CONFIG,
    FORCE,
    IMAGES,
    PAGES,
    PNG,
    RESULTS_OUT,
    SITE_OUT,
    corpus_options,
    model_options,
    settings_from,
    study_options,
    user_errors,
)
from attnreport.errors import AttnReportError


def quiet_libraries() -> None:
    """Keep transformers' progress bars and advice out of the report's output."""
    import transformers

    transformers.utils.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()


class _WarningsToStderr(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        click.echo(f"{record.levelname.lower()}: {record.getMessage()}", err=True)


@click.group()
@click.version_option(__version__, prog_name="attnreport")
def main() -> None:
    """Capture a causal LM's attention exactly and publish it as a static report."""
    handler = _WarningsToStderr(level=logging.WARNING)
    logging.getLogger("attnreport").addHandler(handler)
    logging.getLogger("attnreport").setLevel(logging.WARNING)


@main.command()
@model_options
@click.pass_context
@user_errors
def verify(ctx: click.Context, **_settings: Any) -> None:
    """Check that the captured numbers are the model's own; exit 0 only if all checks pass.

    Prints, per check, the largest error over all layers, heads and sentences and the
    tolerance it must stay within, derived from the model's dtype (its machine epsilon)
    and the magnitudes compared, with the numbers it was derived from.
    """
    from attnreport.session import session_for
    from attnreport.verify import verify_sentences

    settings = settings_from(ctx)
    quiet_libraries()
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
@PAGES
@study_options
@click.pass_context
@user_errors
def build(ctx: click.Context, force: bool, **_settings: Any) -> None:
    """Run the whole study and write the report as a static site.

    The new site is built beside the output folder and swapped in only when complete,
    so a failed or interrupted build leaves the previous site whole.
    """
    from attnreport.build import build_site
    from attnreport.corpus.progress import RichProgress

    settings = settings_from(ctx)
    quiet_libraries()
    with RichProgress() as progress:
        summary = build_site(settings, force, progress)
    seconds = sum(summary.timings.seconds.values())
    click.echo(
        f"built {summary.pages} page(s) with {summary.figures} figure(s), {summary.files} files ({summary.bytes / 1e6:.1f} MB) in {seconds:.1f} s"
    )
    click.echo(f"open {summary.out / 'index.html'}  (or: attnreport serve {summary.out})")


@main.command()
@model_options
@RESULTS_OUT
@corpus_options
@study_options
@click.pass_context
@user_errors
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
    from attnreport.corpus import CorpusOptions, run_corpus
    from attnreport.corpus.progress import RichProgress

    settings = settings_from(ctx)
    quiet_libraries()
    options = CorpusOptions(engine, resume, ray_address, workers)
    try:
        with RichProgress() as progress:
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
@click.argument("results_dir", type=click.Path(file_okay=False))
@click.option("--out", required=True, help="Output folder for the site.")
@click.option(
    "--config",
    "config_file",
    type=click.Path(dir_okay=False),
    default=None,
    help="Settings file whose title, authors, date, images, png and pages to use.",
)
@click.option("--title", default=None, help="Site title (overrides the config file).")
@click.option("--no-images", is_flag=True, help="Skip the static images of every figure (faster).")
@click.option(
    "--png/--no-png",
    default=None,
    help="Also write (or not) a static PNG of every figure [default: as the site was built].",
)
@PAGES
@FORCE
@user_errors
def render(
    results_dir: str,
    out: str,
    config_file: str | None,
    title: str | None,
    no_images: bool,
    png: bool | None,
    pages: str | None,
    force: bool,
) -> None:
    """Draw the site from a results folder (``analyze --out`` or a site's ``results/``).

    Needs no model and imports neither torch nor transformers. Without --config, a
    site's own results folder renders with the options it was built with, so
    ``render SITE/results`` reproduces SITE byte for byte (its pages included).
    """
    from attnreport.config import page_choice
    from attnreport.publish import merged_options, render_folder, stored_options

    problem = page_choice("pages", pages) if pages is not None else None
    if problem:
        raise AttnReportError(problem)
    base = stored_options(results_dir)
    values: dict[str, Any] = {
        "title": title,
        "images": False if no_images else None,
        "png": png,
        "pages": pages,
    }
    if config_file is not None:
        from attnreport.config import load_settings
        from attnreport.site.context import date_from_env

        config = load_settings(config_file)
        values = {
            "title": title or config.title,
            "authors": config.authors,
            "date": config.date or date_from_env(),
            "images": False if no_images else config.images,
            "png": config.png if png is None else png,
            "pages": pages or config.pages,
        }
    summary = render_folder(results_dir, out, merged_options(base, **values), force)
    click.echo(
        f"rendered {summary.pages} page(s) with {summary.figures} figure(s), {summary.files} files ({summary.bytes / 1e6:.1f} MB)"
    )
    click.echo(f"open {summary.out / 'index.html'}  (or: attnreport serve {summary.out})")


@main.command()
@click.argument("expected", type=click.Path(file_okay=False))
@click.argument("actual", type=click.Path(file_okay=False))
@click.option("--rtol", default=1e-3, show_default=True, help="Relative tolerance.")
@click.option("--atol", default=1e-4, show_default=True, help="Absolute tolerance.")
@user_errors
def compare(expected: str, actual: str, rtol: float, atol: float) -> None:
    """Compare two results folders within a tolerance; exit 1 if any number moved more.

    Discrete statistics (top keys, ranks, focus fractions) may differ where the top two
    scores are within the tolerance: such near-ties are listed, not counted as failures.
    """
    from attnreport.results import load
    from attnreport.results.compare import Tolerance, compare_results

    result = compare_results(load(expected), load(actual), Tolerance(rtol, atol))
    for line in result.near_ties:
        click.echo(f"near-tie: {line}")
    for line in result.problems:
        click.echo(f"moved: {line}", err=True)
    if not result.ok:
        raise AttnReportError(
            f"{len(result.problems)} difference(s) beyond rtol {rtol}, atol {atol} between "
            f"{expected} and {actual}"
        )
    click.echo(f"{expected} and {actual} agree within rtol {rtol}, atol {atol}")


@main.command()
@click.option(
    "--dir",
    "directory",
    default=".",
    type=click.Path(file_okay=False),
    help="Where to write the starter files.",
)
@user_errors
def init(directory: str) -> None:
    """Write a starter attnreport.toml and sentences.txt (never overwrites)."""
    from attnreport.config import STARTER
    from attnreport.sentences import default_sentence_text

    target = Path(directory)
    files = {"attnreport.toml": STARTER, "sentences.txt": default_sentence_text()}
    existing = [name for name in files if (target / name).exists()]
    if existing:
        raise AttnReportError(
            f"{target / existing[0]} already exists; remove it or use another --dir"
        )
    target.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (target / name).write_text(text, encoding="utf-8")
    click.echo(
        f"wrote {target / 'attnreport.toml'} and {target / 'sentences.txt'}; next: attnreport build"
    )


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
    analysed again alone, an edited template or page setting only re-renders, and open
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
    from attnreport.corpus.progress import RichProgress
    from attnreport.serve.loop import watch_site
    from attnreport.serve.project import Project

    def stop_on_sigterm(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt  # ``kill`` stops the server as Ctrl-C does

    signal.signal(signal.SIGTERM, stop_on_sigterm)
    given = {"out": directory} if directory is not None else {}
    config = Path(config_file) if config_file is not None else None
    project = Project(config, given, Path(results) if results is not None else None)
    quiet_libraries()

    def ready(url: str) -> None:
        click.echo(f"serving {project.site} on {url} (building; Ctrl-C stops)")

    try:
        _listening(
            lambda: watch_site(
                project, host, port, lambda line: click.echo(line), RichProgress, ready
            ),
            port,
        )
    except KeyboardInterrupt:
        click.echo("stopped; the site and its results are kept")


if __name__ == "__main__":
    main()
