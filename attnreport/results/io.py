"""``dump`` results to their canonical files and ``load`` them back, with one-line errors.

Canonical JSON: UTF-8, sorted keys, no NaN, compact separators, floats already rounded to
6 significant digits, so the same results give the same JSON bytes; every file but the
manifest is then gzip-compressed (``layout``: the names and encoding of each schema
version). The manifest lists every other file with its size on disk (``files``); ``load``
checks that list, so a folder that an interrupted ``analyze`` or copy left half-written is
refused by name.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from attnreport.errors import AttnReportError
from attnreport.jsontypes import Json
from attnreport.results.canonical import dump_json, dump_json_streamed
from attnreport.results.interventions import (
    Interventions,
    interventions_from_json,
    interventions_to_json,
)
from attnreport.results.kept import LoadedSentences, kept_sentences
from attnreport.results.layout import CURRENT, MANIFEST, Layout, decode, is_results_file
from attnreport.results.manifest import (
    READABLE_VERSIONS,
    SCHEMA_VERSION,
    Manifest,
    manifest_from_json,
    manifest_to_json,
)
from attnreport.results.sentence_files import sentence_files
from attnreport.results.types import (
    SentenceResults,
    SetResults,
    sentence_from_json,
    set_from_json,
    set_to_json,
)

__all__ = ["Results", "dump", "dump_json", "dump_json_streamed", "load", "parse_files"]


@dataclass(frozen=True, eq=False)
class Results:
    """Everything one study computed; ``sentences[i].index == i``. ``len(sentences)`` is
    the set's size; a sentence without a results file of its own (version 9: no page,
    ``results.kept``) is not in ``sentences`` (indexing it is a LookupError, iterating
    skips it) but is in the manifest and the set tables."""

    manifest: Manifest
    sentences: Sequence[SentenceResults]
    set: SetResults
    interventions: Interventions | None = None


def dump(results: Results) -> dict[str, bytes]:
    """The results folder as ``{relative path: bytes}`` in the ``CURRENT`` layout (the
    parts gzip-compressed); the manifest, plain JSON, lists the others with their sizes."""
    encode = CURRENT.encode
    files = {CURRENT.set: encode(dump_json(set_to_json(results.set)))}
    if results.interventions is not None:
        iv = interventions_to_json(results.interventions)
        files[CURRENT.interventions] = encode(dump_json(iv))
    for s in results.sentences:
        files.update(sentence_files(s))
    sizes = {name: len(data) for name, data in sorted(files.items())}
    files[MANIFEST] = dump_json(manifest_to_json(replace(results.manifest, files=sizes)))
    return dict(sorted(files.items()))


def to_json(results: Results) -> Json:
    """The parts as JSON values: {"manifest", "set", "sentences", "interventions"}, each
    sentence's scores inline in its ``attention`` (as up to schema 9), not in part files,
    so that ``as_results`` reads the value back without a folder."""
    files = dump(results)
    values = {
        name: json.loads(decode(data, name, name))
        for name, data in files.items()
        if not CURRENT.is_map_part(name)
    }
    return {
        "manifest": values[MANIFEST],
        "set": values[CURRENT.set],
        "sentences": [
            _inline_maps(values, files, CURRENT.sentence(s.index)) for s in results.sentences
        ],
        "interventions": values.get(CURRENT.interventions),
    }


def _inline_maps(values: Mapping[str, Any], files: Mapping[str, bytes], name: str) -> Any:
    """Sentence file ``name``'s JSON value with the scores of its parts in ``attention``."""
    value = values[name]
    if value.get("attention") is None:
        return value
    maps = sentence_from_json(value, name, files).attention
    return {**value, "attention": None if maps is None else maps.to_json()}


def _schema_version(value: Any, where: str) -> int:
    schema = value.get("schema") if isinstance(value, dict) else None
    understood = " and ".join(str(v) for v in READABLE_VERSIONS)
    prefix = "attnreport.results/"
    if not isinstance(schema, str) or not schema.startswith(prefix):
        raise AttnReportError(f"{where} is not an attnreport results file (no schema field)")
    version = schema[len(prefix) :]
    if not version.isdigit() or int(version) not in READABLE_VERSIONS:
        newer = version.isdigit() and int(version) > SCHEMA_VERSION
        hint = "; upgrade attnreport" if newer else ""
        raise AttnReportError(
            f"{where} has schema version {version}; this attnreport reads versions {understood}{hint}"
        )
    return int(version)


def _parse(data: bytes, where: str) -> Any:
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise AttnReportError(f"{where} is truncated or not valid JSON ({err})") from err


def layout_of(manifest: Any, where: str = MANIFEST) -> Layout:
    """The layout (file names) of the folder whose manifest is ``manifest`` (a JSON value);
    errors name ``where``: no schema, or a version this attnreport does not read."""
    return Layout(_schema_version(manifest, where))


def from_parts(
    manifest: Any,
    set_: Any,
    sentences: list[Any],
    interventions: Any = None,
    where: str = "",
    layout: Layout = CURRENT,
    indices: list[int] | None = None,
    parts: Mapping[str, bytes] | None = None,
) -> Results:
    """Typed results from the four parts as JSON values (what the files hold); errors
    name ``where`` + the part's file in ``layout``. ``indices``: the sentences that
    ``sentences`` are, when the folder keeps only some (None: all, in order); ``parts``:
    the folder's files by name, where the maps are in part files (schema 10)."""
    for value, name in ((manifest, MANIFEST), (set_, layout.set)):
        _schema_version(value, where + name)
    count = len(manifest.get("sentences") or []) if isinstance(manifest, dict) else 0
    indices = list(range(len(sentences))) if indices is None else indices
    typed = [
        sentence_from_json(s, where + layout.sentence(i), parts)
        for i, s in zip(indices, sentences, strict=True)
    ]
    return Results(
        manifest=manifest_from_json(manifest, where + MANIFEST),
        sentences=tuple(typed) if len(typed) >= count else LoadedSentences(count, typed),
        set=set_from_json(set_, where + layout.set),
        interventions=None
        if interventions is None
        else interventions_from_json(interventions, where + layout.interventions),
    )


def as_results(value: Results | Mapping[str, Any]) -> Results:
    """``value`` if typed, else the parts of a mapping parsed by the schema's owner."""
    if isinstance(value, Results):
        return value
    return from_parts(
        value["manifest"], value["set"], list(value["sentences"]), value.get("interventions")
    )


def check_sizes(sizes: Mapping[str, int], listed: Any, where: str) -> None:
    """Every file the manifest lists (``listed``: name -> bytes) is in ``sizes`` (name ->
    bytes on disk) with its listed size; one-line errors name the first that is not."""
    if not isinstance(listed, dict):
        raise AttnReportError(f"{where}{MANIFEST} lists no files; the folder is not complete")
    for name, size in listed.items():
        if name not in sizes:
            raise AttnReportError(
                f"results folder {where.rstrip('/')} is incomplete: {name} is missing "
                "(an interrupted analyze or copy?); run attnreport analyze again"
            )
        if sizes[name] != size:
            raise AttnReportError(
                f"{where}{name} is truncated or was changed: {sizes[name]} bytes, "
                f"the manifest says {size}"
            )


def _check_complete(files: Mapping[str, bytes], listed: Any, where: str) -> None:
    check_sizes({name: len(data) for name, data in files.items()}, listed, where)


def read_part(data: bytes, name: str, where: str = "") -> Any:
    """The JSON value of results file ``name`` (gunzipped when ``.gz``), its schema checked;
    errors name ``where + name``."""
    value = _parse(decode(data, name, where + name), where + name)
    _schema_version(value, where + name)
    return value


def _part(files: Mapping[str, bytes], name: str, where: str) -> Any:
    if name not in files:
        raise AttnReportError(
            f"results folder {where.rstrip('/')} is incomplete: {name} is missing; "
            "run attnreport analyze again"
        )
    return read_part(files[name], name, where)


def parse_files(files: Mapping[str, bytes], where: str = "") -> Results:
    """Typed results from ``{relative path: bytes}`` (what ``dump`` returns); ``where``
    prefixes file names in errors (the folder, ending in "/")."""
    if MANIFEST not in files:
        if any(is_results_file(name) for name in files):
            raise AttnReportError(
                f"results folder {where.rstrip('/')} has no {MANIFEST} (it is written with "
                "the other files: an interrupted analyze?); run attnreport analyze again"
            )
        raise AttnReportError(
            f"{where.rstrip('/') or 'this'} is not a results folder: no {MANIFEST}"
        )
    manifest = _part(files, MANIFEST, where)
    layout = layout_of(manifest, where + MANIFEST)
    if layout.version >= 2:
        _check_complete(files, manifest.get("files"), where)
    count = len(manifest.get("sentences") or [])
    kept = kept_sentences(manifest.get("files"), count, layout)
    sentences = [_part(files, layout.sentence(i), where) for i in kept]
    has_iv = layout.interventions in files
    iv = _part(files, layout.interventions, where) if has_iv else None
    set_ = _part(files, layout.set, where)
    return from_parts(manifest, set_, sentences, iv, where, layout, kept, files)


def read_folder(folder: Path) -> dict[str, bytes]:
    """Every results file (``.json``, ``.json.gz``) of a folder, by relative POSIX path."""
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if is_results_file(p.name) and p.is_file()
    }


def results_files(folder: str | Path) -> dict[str, bytes]:
    """The results files of a folder as ``{relative path: bytes}``: the manifest and the
    files it lists (a run's resume state, ``run.json`` and ``partials/``, left out; a
    folder of schema 1, which lists none, gives every results file). ``parse_files``
    reads them; written back as they are, they render byte for byte as the folder does."""
    folder = Path(folder)
    manifest = folder / MANIFEST
    listed = _listed(manifest.read_bytes()) if manifest.is_file() else None
    if listed is None:
        return read_folder(folder)
    names = [MANIFEST, *(name for name in listed if folder.joinpath(*name.split("/")).is_file())]
    return {name: folder.joinpath(*name.split("/")).read_bytes() for name in sorted(names)}


def _listed(manifest: bytes) -> list[str] | None:
    """The file names a manifest's ``files`` lists; None when it lists none (schema 1) or
    does not parse (``parse_files`` says what is wrong)."""
    try:
        files = json.loads(manifest.decode("utf-8")).get("files")
    except (UnicodeDecodeError, ValueError, AttributeError):
        return None
    return [str(name) for name in files] if isinstance(files, dict) else None


def load(folder: str | Path) -> Results:
    """Read a results folder written by ``attnreport analyze`` (or a site's ``results/``)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise AttnReportError(f"results folder {folder} does not exist")
    return parse_files(read_folder(folder), f"{folder}/")
