"""``attnreport.toml``: the settings of a report, validated with one-line errors.

Command-line options override the file; the file overrides the defaults. Every key is
optional. Relative paths in the file are relative to the file's folder.
"""

from __future__ import annotations

import difflib
import tomllib
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from attnreport.errors import AttnReportError


@dataclass(frozen=True)
class Config:
    model: str = "default"
    sentences: str | None = None
    out: str = "site"
    title: str = "What does attention focus on?"
    authors: tuple[str, ...] = ("attnreport",)
    date: str | None = None  # ISO date; else SOURCE_DATE_EPOCH; else the model-independent default
    dtype: str = "float32"
    device: str = "cpu"
    truncate: bool = False
    bos: str = "auto"  # auto (the tokenizer's default), always or never
    images: bool = True
    breakdown_ranks: int = 3
    epsilons: tuple[float, ...] = (5e-1, 1e-3, 1e-10)
    intervene_layer: int | None = None
    scaling_sentence: int = 0
    mean_sentences: tuple[int, ...] | None = None
    map_tokens: int = 256
    view_head: tuple[int, ...] | None = None  # [layer, head] the pages open on


KEYS = tuple(f.name for f in fields(Config))
_KINDS: dict[str, tuple[type, ...]] = {
    "model": (str,),
    "sentences": (str,),
    "out": (str,),
    "title": (str,),
    "authors": (list,),
    "date": (str,),
    "dtype": (str,),
    "device": (str,),
    "truncate": (bool,),
    "bos": (str,),
    "images": (bool,),
    "breakdown_ranks": (int,),
    "epsilons": (list,),
    "intervene_layer": (int,),
    "scaling_sentence": (int,),
    "mean_sentences": (list,),
    "map_tokens": (int,),
    "view_head": (list,),
}
_ITEM_KINDS = {
    "authors": (str,),
    "epsilons": (int, float),
    "mean_sentences": (int,),
    "view_head": (int,),
}


def _check_key(key: str, value: Any, origin: str) -> Any:
    if key not in _KINDS:
        near = difflib.get_close_matches(key, KEYS, n=1)
        hint = f"; did you mean '{near[0]}'?" if near else f"; valid keys: {', '.join(KEYS)}"
        raise AttnReportError(f"{origin}: unknown key {key!r}{hint}")
    kinds = _KINDS[key]
    if isinstance(value, bool) and bool not in kinds or not isinstance(value, kinds):
        raise AttnReportError(
            f"{origin}: '{key}' must be {kinds[0].__name__}, got {type(value).__name__} {value!r}"
        )
    if key in _ITEM_KINDS:
        bad = [v for v in value if isinstance(v, bool) or not isinstance(v, _ITEM_KINDS[key])]
        if bad:
            raise AttnReportError(
                f"{origin}: every item of '{key}' must be {_ITEM_KINDS[key][0].__name__}, got {bad[0]!r}"
            )
        return tuple(float(v) if key == "epsilons" else v for v in value)
    return value


def validate(values: dict[str, Any], origin: str) -> dict[str, Any]:
    """Checked values (tuples for lists); raises on unknown keys, wrong types, bad numbers."""
    checked = {key: _check_key(key, value, origin) for key, value in values.items()}
    if "epsilons" in checked:
        eps = checked["epsilons"]
        if not eps or any(not (e > 0 and e != float("inf")) for e in eps):
            raise AttnReportError(f"{origin}: epsilons must be positive numbers, got {list(eps)}")
    for key in ("breakdown_ranks", "map_tokens"):
        if key in checked and checked[key] < 1:
            raise AttnReportError(f"{origin}: '{key}' must be at least 1, got {checked[key]}")
    if "view_head" in checked and (len(checked["view_head"]) != 2 or min(checked["view_head"]) < 0):
        raise AttnReportError(
            f"{origin}: 'view_head' must be [layer, head], got {list(checked['view_head'])}"
        )
    if checked.get("bos", "auto") not in ("auto", "always", "never"):
        raise AttnReportError(
            f"{origin}: 'bos' must be auto, always or never, got {checked['bos']!r}"
        )
    for key in ("intervene_layer", "scaling_sentence"):
        if key in checked and checked[key] < 0:
            raise AttnReportError(f"{origin}: '{key}' must not be negative, got {checked[key]}")
    return checked


def read_config(path: str | Path | None) -> dict[str, Any]:
    """Validated values of a config file ({} when ``path`` is None)."""
    if path is None:
        return {}
    path = Path(path)
    if not path.is_file():
        raise AttnReportError(f"config file {path} does not exist")
    try:
        values = tomllib.loads(path.read_bytes().decode("utf-8-sig"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise AttnReportError(f"{path} is not valid TOML: {err}".splitlines()[0]) from err
    checked = validate(values, str(path))
    for key in ("sentences", "out"):
        if key in checked:
            checked[key] = str((path.parent / checked[key]).expanduser())
    if checked.get("model", "").startswith((".", "~")):
        checked["model"] = str((path.parent / checked["model"]).expanduser())
    return checked


def merged_config(path: str | Path | None, overrides: dict[str, Any]) -> Config:
    """Defaults < config file < command-line options given (``None`` means not given)."""
    values = read_config(path)
    values.update({k: v for k, v in overrides.items() if v is not None})
    return Config(**values)


STARTER = """\
# attnreport settings; every key is optional. Run: attnreport build --config attnreport.toml
model = "default"            # 'default', a hub id, a local directory or a .gguf file
sentences = "sentences.txt"  # one sentence per line
out = "site"
title = "What does attention focus on?"
authors = ["Your Name"]
# date = "2026-01-01"        # else SOURCE_DATE_EPOCH, so rebuilds are byte-identical
bos = "auto"                 # auto (the tokenizer's default), always or never: a leading BOS token
breakdown_ranks = 3          # ranks shown by the sort_idx widget of the breakdown figure
epsilons = [5e-1, 1e-3, 1e-10]
# intervene_layer = 12       # default: the layer with the strongest first-token focus
scaling_sentence = 0
# mean_sentences = [0, 1, 2]
# view_head = [3, 4]         # layer and head the pages open on (default: strongest first-token focus)
images = true                # export SVG/PNG copies of every figure
"""
