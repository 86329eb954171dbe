"""Where each model of a comparison keeps its results, and how a list of them is read.

A comparison's results are one folder per model, named by the model's slug
(``smollm2-135m-instruct``), listed in order in ``models.json`` beside them:

    DIR/models.json               {"results": ["smollm2-135m-instruct", "gemma-3-270m"]}
    DIR/smollm2-135m-instruct/    one results folder (docs/results-schema.md)
    DIR/gemma-3-270m/

A site of several models lists them the same way in ``SITE/results/models.json``, with
paths relative to that folder (``../gemma-3-270m/results``). Nothing here imports torch.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from attnreport.errors import AttnReportError
from attnreport.results.manifest import manifest_from_json
from attnreport.site.slugs import ascii_words

MODELS_FILE = "models.json"
MANIFEST = "manifest.json"


def model_slug(name: str) -> str:
    """``SmolLM2-135M-Instruct (Q4_1 GGUF, embedded)`` -> ``smollm2-135m-instruct``: the
    name before its parenthesis in lower-case ASCII words; ``model`` when none is left."""
    return ascii_words(name.split(" (")[0], limit=40) or "model"


def unique_slugs(names: Sequence[str]) -> list[str]:
    """One slug per model name, ``-2``, ``-3`` added where two would be equal."""
    out: list[str] = []
    for name in names:
        slug, n = model_slug(name), 2
        while (slug if n == 2 else f"{slug}-{n - 1}") in out:
            n += 1
        out.append(slug if n == 2 else f"{slug}-{n - 1}")
    return out


def models_json(paths: Sequence[str]) -> bytes:
    """``models.json``: the results folders in order, relative to the file's folder."""
    return (json.dumps({"results": list(paths)}, indent=1) + "\n").encode("utf-8")


def listed_folders(folder: Path) -> list[Path] | None:
    """The results folders ``folder/models.json`` lists, in order; None without the file.
    One line for a malformed list or a listed folder that holds no results."""
    path = folder / MODELS_FILE
    if not path.is_file():
        return None
    try:
        paths = json.loads(path.read_text(encoding="utf-8"))["results"]
    except (ValueError, KeyError, TypeError, UnicodeDecodeError) as err:
        raise AttnReportError(f"{path} is not a list of results folders ({err})") from err
    if not isinstance(paths, list) or not paths or not all(isinstance(p, str) for p in paths):
        raise AttnReportError(f"{path} must list at least one results folder")
    out = [(folder / p).resolve() for p in paths]
    for listed in out:
        if not (listed / MANIFEST).is_file():
            raise AttnReportError(f"{path} lists {listed}, which holds no results (no manifest)")
    return out


def results_folders(given: Sequence[str | Path]) -> list[Path]:
    """The results folders of one report: each folder given, or the folders that a given
    folder's ``models.json`` lists (a comparison's results, or a site's ``results/``)."""
    out: list[Path] = []
    for folder in map(Path, given):
        listed = None if (folder / MANIFEST).is_file() else listed_folders(folder)
        out.extend(listed if listed is not None else [folder])
    return out


def sentence_texts(folder: Path) -> tuple[str, ...]:
    """The texts of the sentences a results folder was run on (its manifest alone)."""
    path = folder / MANIFEST
    try:
        manifest = manifest_from_json(json.loads(path.read_text(encoding="utf-8")), str(path))
    except (OSError, ValueError) as err:
        raise AttnReportError(f"{path} cannot be read ({err})") from err
    return tuple(s.text for s in manifest.sentences)


def check_same_sentences(folders: Sequence[Path]) -> None:
    """Refuse, in one line, models run on different sentences: the comparison's per-layer
    numbers pool a set, so every model must have read the same one."""
    first = sentence_texts(folders[0])
    for folder in folders[1:]:
        texts = sentence_texts(folder)
        if texts != first:
            missing = [t for t in first if t not in texts] or [t for t in texts if t not in first]
            what = f"e.g. {missing[0][:40]!r}" if missing else "in another order"
            raise AttnReportError(
                f"{folders[0]} and {folder} were run on different sentences ({what}); "
                "analyse every model on the same sentence set"
            )
