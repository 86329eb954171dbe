"""The settings of a report: one typed value, checked once, read from ``attnreport.toml``.

``Settings`` is the only place a setting is declared: its default, its type and its
check live on its field, so adding a setting means adding the field, its check (when
the type alone is not enough) and a line in ``STARTER``. Every ``Settings`` value is
valid: the checks run when it is made, whatever made it (the command line, a file, a
library call). Checks that need the model (does layer 12 exist?) are
``study.check_settings``.

Command-line options override the file; the file overrides the defaults. Every key is
optional. Relative paths in the file are relative to the file's folder.
"""

from __future__ import annotations

import difflib
import math
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from attnreport import vocabulary as V
from attnreport.errors import AttnReportError
from attnreport.page_choice import parse_pages
from attnreport.vocabulary import BOS, DEVICE_MAPS, DEVICES, DTYPES

Check = Callable[[str, Any], str | None]  # (key, value) -> what is wrong, or None
# setting name -> value, as a settings file, the command line or a manifest gives them,
# before ``make_settings`` checks them (``Settings`` is the typed value)
SettingValues = dict[str, Any]


class SettingError(AttnReportError):
    """A bad value for the setting ``key`` (the message does not say where it came from)."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key


@dataclass(frozen=True)
class Rule:
    """How one setting is checked.

    ``kind``: the accepted types (``list`` also accepts a tuple and stores a tuple);
    ``items``: the accepted types of a list's items; ``choices``: the accepted strings;
    ``check``: a further test on a well-typed value; ``recorded``: the setting changes
    the numbers, so the results' manifest records it.
    """

    kind: tuple[type, ...]
    items: tuple[type, ...] = ()
    choices: tuple[str, ...] = ()
    check: Check | None = None
    recorded: bool = False


def setting(
    default: Any,
    *kind: type,
    items: tuple[type, ...] = (),
    choices: tuple[str, ...] = (),
    check: Check | None = None,
    recorded: bool = False,
) -> Any:
    """A ``Settings`` field: its default and its ``Rule``."""
    rule = Rule(tuple(kind), items, choices, check, recorded)
    return field(default=default, metadata={"rule": rule})


def at_least_one(key: str, value: int) -> str | None:
    return f"'{key}' must be at least 1, got {value}" if value < 1 else None


def not_negative(key: str, value: int) -> str | None:
    return f"'{key}' must not be negative, got {value}" if value < 0 else None


def positive_numbers(key: str, value: tuple[float, ...]) -> str | None:
    good = value and all(v > 0 and math.isfinite(v) for v in value)
    return None if good else f"{key} must be positive numbers, got {list(value)}"


def positive_or_zero(key: str, value: float) -> str | None:
    good = value >= 0 and math.isfinite(value)
    return None if good else f"'{key}' must be a number of at least 0, got {value}"


def unit_depth(key: str, value: float) -> str | None:
    good = 0 <= value <= 1 and math.isfinite(value)
    return None if good else f"'{key}' must be a relative depth from 0 to 1, got {value}"


def png_scale_range(key: str, value: float) -> str | None:
    good = 0 < value <= 8 and math.isfinite(value)
    return None if good else f"'{key}' must be more than 0 and at most 8, got {value}"


def iso_day(key: str, value: str) -> str | None:
    """A day written YYYY-MM-DD (what the byline shows and the analysis date is compared with)."""
    from datetime import date

    try:
        good = len(value) == 10 and date.fromisoformat(value).isoformat() == value
    except ValueError:
        good = False
    return None if good else f"'{key}' must be a day written YYYY-MM-DD, got {value!r}"


def layer_and_head(key: str, value: tuple[int, ...]) -> str | None:
    good = len(value) == 2 and min(value) >= 0
    return None if good else f"'{key}' must be [layer, head], got {list(value)}"


def model_names(key: str, value: tuple[str, ...]) -> str | None:
    """A list of models: at least one, none named twice."""
    if not value:
        return f"'{key}' must name at least one model"
    twice = sorted({name for name in value if value.count(name) > 1})
    return f"'{key}' names {twice[0]!r} twice" if twice else None


def page_choice(_key: str, value: str) -> str | None:
    """A valid ``--pages`` value: all, a count N, or indices like 0,5,10-12."""
    try:
        parse_pages(value)
    except AttnReportError as err:
        return str(err)
    return None


@dataclass(frozen=True)
class Settings:
    """Everything a report is made from. ``recorded`` settings change the numbers."""

    model: str = setting("default", str)  # 'default', a hub id, a local directory or a .gguf
    # several models in one report (each its own results and pages, one comparison index);
    # None: ``model`` alone
    models: tuple[str, ...] | None = setting(None, list, items=(str,), check=model_names)
    sentences: str | None = setting(None, str)  # one sentence per line; None: the built-in set
    out: str = setting("site", str)
    title: str = setting(V.TITLE, str)
    authors: tuple[str, ...] = setting(V.AUTHORS, list, items=(str,))
    # ISO day, on or after the analysis; else the analysis day (dates.report_date)
    date: str | None = setting(None, str, check=iso_day)
    lede: str | None = setting(None, str)  # Markdown opening the index (else one computed)
    afterword: str | None = setting(None, str)  # Markdown closing the index
    dtype: str = setting("float32", str, choices=DTYPES)
    device: str = setting("cpu", str, choices=DEVICES)
    device_map: str | None = setting(None, str, choices=DEVICE_MAPS)  # None: all on ``device``
    truncate: bool = setting(False, bool)  # cut sentences longer than the context
    images: bool = setting(V.IMAGES, bool)  # a static SVG of every figure
    png: bool = setting(V.PNG, bool)  # a static PNG too (the chart's menu saves one anyway)
    png_scale: float = setting(
        V.PNG_SCALE, float, int, check=png_scale_range
    )  # PNG size / figure size
    # sentences with a page: all, N, 0,5,10-12; the analysis keeps the maps and per-query
    # rows of those only (``page_choice.kept_indices``), the others are in the set tables
    pages: str = setting(V.PAGES, str, check=page_choice, recorded=True)
    bos: str = setting(V.BOS_DEFAULT, str, choices=BOS, recorded=True)  # begin-of-sequence token
    # each sentence read as a user message in the tokenizer's chat template (else plain text)
    chat_template: bool = setting(False, bool, recorded=True)
    breakdown_ranks: int = setting(V.BREAKDOWN_RANKS, int, check=at_least_one, recorded=True)
    epsilons: tuple[float, ...] = setting(
        V.EPSILONS, list, items=(int, float), check=positive_numbers, recorded=True
    )
    intervene_layer: int | None = setting(None, int, check=not_negative, recorded=True)
    # the attention layer nearest this relative depth (0 first, 1 last), when no
    # intervene_layer is set; a comparison records it for each model after the first
    intervene_depth: float | None = setting(None, float, int, check=unit_depth, recorded=True)
    scaling_sentence: int = setting(0, int, check=not_negative, recorded=True)  # maps drawn
    scaling_sentences: tuple[int, ...] | None = setting(None, list, items=(int,), recorded=True)
    mean_sentences: tuple[int, ...] | None = setting(None, list, items=(int,), recorded=True)
    map_tokens: int = setting(
        V.MAP_TOKENS, int, check=at_least_one, recorded=True
    )  # n x n maps up to this
    view_head: tuple[int, ...] | None = setting(
        None, list, items=(int,), check=layer_and_head, recorded=True
    )  # (layer, head) the pages open on; None: computed
    rtol: float = setting(V.RTOL, float, int, check=positive_or_zero)  # compare's tolerances
    atol: float = setting(V.ATOL, float, int, check=positive_or_zero)

    def __post_init__(self) -> None:
        for f in fields(self):
            value = checked(f.name, getattr(self, f.name), f.default, f.metadata["rule"])
            object.__setattr__(self, f.name, value)  # lists become tuples, numbers floats

    def model_names(self) -> tuple[str, ...]:
        """The models of the report, in order: ``models``, else ``model`` alone."""
        return self.models if self.models else (self.model,)

    def recorded(self) -> SettingValues:
        """The settings that change the numbers, JSON-ready: the manifest's ``settings``."""
        return {
            f.name: list(value) if isinstance(value := getattr(self, f.name), tuple) else value
            for f in fields(self)
            if f.metadata["rule"].recorded
        }


def checked(key: str, value: Any, default: Any, rule: Rule) -> Any:
    """``value`` normalised (tuples for lists, floats for float items); SettingError if bad."""
    if value is None and default is None:
        return None
    kinds = (list, tuple) if rule.kind == (list,) else rule.kind
    if isinstance(value, bool) and bool not in kinds or not isinstance(value, kinds):
        name = rule.kind[0].__name__
        raise SettingError(key, f"'{key}' must be {name}, got {type(value).__name__} {value!r}")
    if rule.items:
        bad = [v for v in value if isinstance(v, bool) or not isinstance(v, rule.items)]
        if bad:
            name = rule.items[0].__name__
            raise SettingError(key, f"every item of '{key}' must be {name}, got {bad[0]!r}")
        value = tuple(float(v) if float in rule.items else v for v in value)
    if rule.choices and value not in rule.choices:
        raise SettingError(key, f"'{key}' must be one of {', '.join(rule.choices)}; got {value!r}")
    problem = rule.check(key, value) if rule.check else None
    if problem:
        raise SettingError(key, problem)
    return value


KEYS = tuple(f.name for f in fields(Settings))
RULES = {f.name: f.metadata["rule"] for f in fields(Settings)}


def default_of(key: str) -> Any:
    """The default value of setting ``key`` (what the command-line options show)."""
    return next(f.default for f in fields(Settings) if f.name == key)


def make_settings(values: SettingValues, origin: str | dict[str, str]) -> Settings:
    """``Settings(**values)``, with one-line errors that say where the bad value came from
    (``origin``: one name for every value, or one per key)."""
    where = origin if isinstance(origin, dict) else dict.fromkeys(values, origin)
    for key in values:
        if key not in RULES:
            near = difflib.get_close_matches(key, KEYS, n=1)
            hint = f"; did you mean '{near[0]}'?" if near else f"; valid keys: {', '.join(KEYS)}"
            raise AttnReportError(f"{where[key]}: unknown key {key!r}{hint}")
    try:
        return Settings(**values)
    except SettingError as err:
        raise AttnReportError(f"{where.get(err.key, 'settings')}: {err}") from None


def read_settings_file(path: str | Path) -> SettingValues:
    """The raw values of a settings file, paths resolved against its folder (unchecked:
    ``make_settings`` checks them)."""
    path = Path(path)
    if not path.is_file():
        raise AttnReportError(f"config file {path} does not exist")
    try:
        values = tomllib.loads(path.read_bytes().decode("utf-8-sig"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise AttnReportError(f"{path} is not valid TOML: {err}".splitlines()[0]) from err
    for key in ("sentences", "out"):
        if isinstance(values.get(key), str):
            values[key] = str((path.parent / values[key]).expanduser())
    values.update(_relative_models(values, path.parent))
    return values


def _relative_models(values: SettingValues, folder: Path) -> SettingValues:
    """``model`` and the items of ``models`` that are relative paths, made relative to
    the settings file's ``folder``."""

    def resolved(model: Any) -> Any:
        if isinstance(model, str) and model.startswith((".", "~")):
            return str((folder / model).expanduser())
        return model

    out = {"model": resolved(values["model"])} if "model" in values else {}
    if isinstance(values.get("models"), list):
        out["models"] = [resolved(m) for m in values["models"]]
    return out


def load_settings(path: str | Path | None, given: SettingValues | None = None) -> Settings:
    """Defaults < the settings file at ``path`` (None: no file) < ``given`` (the options
    given on the command line). Checked once; an error names the file or the command line."""
    given = dict(given or {})
    from_file = read_settings_file(path) if path is not None else {}
    origin = {key: str(path) for key in from_file} | {key: "command line" for key in given}
    return make_settings(from_file | given, origin)


STARTER = """\
# attnreport settings; every key is optional. Run: attnreport build --config attnreport.toml
model = "default"            # 'default', a hub id, a local directory or a .gguf file
# models = ["default", "gemma-3-270m"]  # several models in one report, compared on its index
sentences = "sentences.txt"  # one sentence per line
out = "site"
title = "What does attention focus on?"
authors = []                 # who wrote the report (byline, citation); init fills in git's user.name
# date = "2026-01-01"        # on or after the analysis; else its day (SOURCE_DATE_EPOCH pins it)
# lede = "Why I looked at *this* model."  # Markdown (raw HTML shown as text) opening the report
# afterword = "What I make of it."       # Markdown closing the index (a TOML multi-line string for more)
dtype = "float32"            # or bfloat16, float16 (analyses stay float32; verify's tolerances follow it)
device = "cpu"               # or cuda, auto
# device_map = "auto"        # or balanced: spread the model over the GPUs (then CPU, disk) with accelerate
truncate = false             # cut sentences longer than the model's context instead of failing
bos = "auto"                 # begin-of-sequence token: auto (as the tokenizer does), always, never
chat_template = false        # true: read each sentence as a user message in the tokenizer's chat template
breakdown_ranks = 3          # ranks shown by the sort_idx widget of the breakdown figure
epsilons = [5e-1, 1e-3, 1e-10]
# intervene_layer = 12       # default: the layer with the strongest first-token focus
# intervene_depth = 0.5      # or the layer nearest this relative depth (0 first, 1 last)
scaling_sentence = 0         # the sentence whose maps the scaling grid draws
# scaling_sentences = [0, 1, 2, 3, 4, 5, 6, 7]   # default: the first 8 (each KL averaged over them)
# mean_sentences = [0, 1, 2]
map_tokens = 256             # n x n attention maps and exact per-query rows up to this many tokens (past it: bins of 32)
# view_head = [3, 4]         # layer and head the pages open on (default: strongest first-token focus)
images = true                # a static SVG of every figure (for readers without JavaScript)
png = false                  # a static PNG of every figure too (slower; the chart menu saves PNGs)
png_scale = 2                # PNG pixels per figure pixel (2: twice the size, for print)
pages = "all"                # sentences with a page (and kept maps): "all", a count "20", or "0,5,10-12"
rtol = 1e-3                  # attnreport compare: relative and absolute tolerances
atol = 1e-4
"""


def starter_text(authors: tuple[str, ...] = ()) -> str:
    """``STARTER`` with its ``authors`` line naming ``authors`` (TOML basic strings)."""
    import json

    named = ", ".join(json.dumps(a, ensure_ascii=False) for a in authors)
    return STARTER.replace("authors = []", f"authors = [{named}]", 1)
