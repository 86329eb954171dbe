"""The ``attnreport`` command line: a thin click layer over the library.

Every command turns an ``AttnReportError`` into one line on stderr and exit code 1,
and Ctrl-C into exit code 130, never a traceback.
"""

from __future__ import annotations

import functools
import logging
import sys
from collections.abc import Callable
from typing import Any

import click

from attnreport import __version__
from attnreport.errors import AttnReportError

MODEL_HELP = "'default' (embedded SmolLM2-135M), a hub id, a local directory or a .gguf file."


BOS_HELP = "Leading BOS token: auto (the tokenizer's default), always or never."


def bos_option(default: str | None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    return click.option(
        "--bos",
        type=click.Choice(["auto", "always", "never"]),
        default=default,
        show_default=default is not None,
        help=BOS_HELP,
    )


def quiet_libraries() -> None:
    """Keep transformers' progress bars and advice out of the report's output."""
    import transformers

    transformers.utils.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()


def user_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Report ``AttnReportError`` and Ctrl-C as one line and a non-zero exit."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except AttnReportError as err:
            click.echo(f"error: {err}", err=True)
            sys.exit(1)
        except KeyboardInterrupt:
            click.echo("interrupted; nothing was written", err=True)
            sys.exit(130)

    return wrapper


def model_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """--model, --sentences, --dtype, --device: shared by every command that runs the model."""
    fn = click.option(
        "--device",
        default="cpu",
        show_default=True,
        type=click.Choice(["cpu", "cuda", "auto"]),
        help="Where the model runs.",
    )(fn)
    fn = click.option(
        "--dtype",
        default="float32",
        show_default=True,
        type=click.Choice(["float32", "bfloat16", "float16"]),
        help="Weights dtype (verification tolerances are for float32).",
    )(fn)
    fn = click.option(
        "--sentences",
        "sentences_file",
        type=click.Path(dir_okay=True),
        default=None,
        help="Text file, one sentence per line (default: the built-in set).",
    )(fn)
    fn = click.option(
        "--model", "model_name", default="default", show_default=True, help=MODEL_HELP
    )(fn)
    return fn


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
@click.option(
    "--truncate",
    is_flag=True,
    help="Cut sentences longer than the model's context instead of failing.",
)
@bos_option("auto")
@user_errors
def verify(
    model_name: str, sentences_file: str | None, dtype: str, device: str, truncate: bool, bos: str
) -> None:
    """Check that the captured numbers are the model's own; exit 0 only if all checks pass.

    Prints, per check, the largest error over all layers, heads and sentences and the
    tolerance it must stay within (float32).
    """
    from attnreport.session import open_session
    from attnreport.verify import verify_sentences

    quiet_libraries()
    session = open_session(model_name, sentences_file, dtype, device, truncate, bos)
    checks = verify_sentences(session.model, session.specs, session.token_tensors())
    for check in checks:
        status = "ok  " if check.passed else "FAIL"
        click.echo(
            f"{status} {check.name}: max error {check.max_error:.3g} (tolerance {check.tolerance:.3g})"
        )
    failed = [c for c in checks if not c.passed]
    if failed:
        click.echo(f"{len(failed)} of {len(checks)} checks failed", err=True)
        sys.exit(1)
    click.echo(f"all {len(checks)} checks passed on {len(session.sentences)} sentence(s)")


def study_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Options shared by ``analyze`` and ``build``; each overrides attnreport.toml."""
    fn = bos_option(None)(fn)
    fn = click.option(
        "--force",
        is_flag=True,
        help="Write into an existing non-empty folder not made by attnreport.",
    )(fn)
    fn = click.option(
        "--truncate",
        is_flag=True,
        default=None,
        help="Cut sentences longer than the model's context instead of failing.",
    )(fn)
    fn = click.option(
        "--intervene-layer",
        type=int,
        default=None,
        help="Layer of the interventions (default: strongest first-token focus).",
    )(fn)
    fn = click.option(
        "--config",
        "config_file",
        type=click.Path(dir_okay=False),
        default=None,
        help="Settings file (default: ./attnreport.toml when present).",
    )(fn)
    return fn


def load_config(config_file: str | None, **overrides: Any):
    from pathlib import Path

    from attnreport.config import merged_config

    if config_file is None and Path("attnreport.toml").is_file():
        config_file = "attnreport.toml"
    if overrides.get("model") == "default":
        overrides["model"] = None  # the option's default must not override the config file
    return merged_config(config_file, overrides)


class RichProgress:
    """Draws the study's stages with rich on stderr; a no-op when stderr is not a terminal."""

    LABELS = {
        "load": "Loading model",
        "capture": "Capturing sentences",
        "interventions": "Running interventions",
        "site": "Drawing charts and pages",
        "write": "Writing",
    }

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
        )

        self.progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=Console(stderr=True),
            transient=False,
        )
        self.tasks: dict[str, Any] = {}
        self.current: str | None = None

    def __call__(self, stage: str, done: int, total: int) -> None:
        if stage not in self.tasks:
            if self.current is not None:
                task = self.tasks[self.current]
                self.progress.update(task, completed=self.progress.tasks[task].total)
            self.tasks[stage] = self.progress.add_task(
                self.LABELS.get(stage, stage), total=max(total, 1)
            )
            self.current = stage
        self.progress.update(self.tasks[stage], completed=done)

    def __enter__(self) -> RichProgress:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.current is not None and exc[0] is None:
            task = self.tasks[self.current]
            self.progress.update(task, completed=self.progress.tasks[task].total)
        self.progress.stop()


@main.command()
@click.option("--model", "model", default="default", help=MODEL_HELP)
@click.option(
    "--sentences",
    default=None,
    help="Text file, one sentence per line (default: the built-in set).",
)
@click.option("--out", default=None, help="Output folder (default: site).")
@click.option("--no-images", is_flag=True, help="Skip the SVG/PNG export of every figure (faster).")
@study_options
@user_errors
def build(
    model: str,
    sentences: str | None,
    out: str | None,
    no_images: bool,
    config_file: str | None,
    intervene_layer: int | None,
    truncate: bool | None,
    force: bool,
    bos: str | None,
) -> None:
    """Run the whole study and write the report as a static site.

    The new site is built beside the output folder and swapped in only when complete,
    so a failed or interrupted build leaves the previous site whole.
    """
    from attnreport.build import build_site

    quiet_libraries()
    config = load_config(
        config_file,
        model=model,
        sentences=sentences,
        out=out,
        images=False if no_images else None,
        intervene_layer=intervene_layer,
        truncate=truncate,
        bos=bos,
    )
    with RichProgress() as progress:
        summary = build_site(config, force, progress)
    seconds = sum(summary.timings.seconds.values())
    click.echo(
        f"built {summary.pages} page(s) with {summary.figures} figure(s), {summary.files} files ({summary.bytes / 1e6:.1f} MB) in {seconds:.1f} s"
    )
    click.echo(f"open {summary.out / 'index.html'}  (or: attnreport serve {summary.out})")


@main.command()
@click.option("--model", "model", default="default", help=MODEL_HELP)
@click.option(
    "--sentences",
    default=None,
    help="Text file, one sentence per line (default: the built-in set).",
)
@click.option(
    "--out", required=True, help="Folder for the results (JSON, see docs/results-schema.md)."
)
@study_options
@user_errors
def analyze(
    model: str,
    sentences: str | None,
    out: str,
    config_file: str | None,
    intervene_layer: int | None,
    truncate: bool | None,
    force: bool,
    bos: str | None,
) -> None:
    """Run the study and write its results as JSON tables plus a manifest."""
    from attnreport.build import write_results

    quiet_libraries()
    config = load_config(
        config_file,
        model=model,
        sentences=sentences,
        out=out,
        intervene_layer=intervene_layer,
        truncate=truncate,
        bos=bos,
    )
    with RichProgress() as progress:
        path, count = write_results(config, force, progress)
    click.echo(f"wrote {count} files to {path}")


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
    from pathlib import Path

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
@click.argument("directory", default="site", type=click.Path(file_okay=False))
@click.option("--port", default=8000, show_default=True, help="Port on localhost.")
@user_errors
def serve(directory: str, port: int) -> None:
    """Preview a built site on http://localhost:PORT (Ctrl-C stops)."""
    import functools as ft
    import http.server
    from pathlib import Path

    if not (Path(directory) / "index.html").is_file():
        raise AttnReportError(f"{directory} has no index.html; run attnreport build first")
    handler = ft.partial(http.server.SimpleHTTPRequestHandler, directory=directory)
    try:
        server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    except OSError as err:
        raise AttnReportError(f"cannot listen on port {port}: {err.strerror}; try --port") from err
    click.echo(f"serving {directory} on http://127.0.0.1:{port}/ (Ctrl-C stops)")
    with server:
        server.serve_forever()


if __name__ == "__main__":
    main()
