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
@user_errors
def verify(
    model_name: str, sentences_file: str | None, dtype: str, device: str, truncate: bool
) -> None:
    """Check that the captured numbers are the model's own; exit 0 only if all checks pass.

    Prints, per check, the largest error over all layers, heads and sentences and the
    tolerance it must stay within (float32).
    """
    from attnreport.session import open_session
    from attnreport.verify import verify_sentences

    quiet_libraries()
    session = open_session(model_name, sentences_file, dtype, device, truncate)
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
