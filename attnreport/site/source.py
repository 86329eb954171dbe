"""What a site is drawn from, read as the assembly needs it: ``SiteSource``.

A corpus results folder can hold thousands of sentences, each with its attention maps;
the site needs them one page at a time. A ``SiteSource`` keeps the set-wide parts in
memory (manifest, set and interventions: their size does not grow with
the corpus) and parses a sentence's results only when its page is drawn. The results
files the site ships in ``results/`` are a lazy mapping that reads each file from the
folder when it is written, so rendering stays flat in memory whatever the corpus size.

``from_results`` wraps results already in memory (``build`` of a small set, the tests);
``from_folder`` reads a results folder (``render``). Both give the same site, but for the
names of the results files: a folder of an older schema version (plain ``.json``) is
shipped as it is, so each source carries the ``Layout`` its files are named by.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from attnreport.errors import AttnReportError
from attnreport.results import Interventions, Manifest, Results, SentenceResults, SetResults
from attnreport.results.interventions import interventions_from_json
from attnreport.results.io import check_sizes, dump, layout_of, load, read_part
from attnreport.results.kept import LoadedSentences, kept_sentences
from attnreport.results.layout import CURRENT, MANIFEST, Layout
from attnreport.results.manifest import manifest_from_json
from attnreport.results.sentence_files import stored
from attnreport.results.types import sentence_from_json, set_from_json


@dataclass(frozen=True)
class SiteSource:
    """The results of ``count`` sentences: set-wide parts in memory, sentences on demand.

    ``sentence(i)`` parses sentence ``i``'s results (``i`` in ``kept``: the sentences
    with a results file of their own, ``results.kept``); ``files`` are the results files
    the site ships (relative path -> bytes), read lazily for a folder, and named by
    ``layout`` (the folder's schema version; ``CURRENT`` for results in memory).
    """

    manifest: Manifest
    set: SetResults
    interventions: Interventions | None
    count: int
    sentence: Callable[[int], SentenceResults]
    files: Mapping[str, bytes]
    folder: Path | None = None  # the results folder read, when not in memory
    layout: Layout = CURRENT
    kept: tuple[int, ...] | None = None  # sentences with a results file; None: all

    def keeps(self, index: int) -> bool:
        """Whether sentence ``index`` has a results file (so it can have a page)."""
        return 0 <= index < self.count and (self.kept is None or index in self.kept)

    @functools.cached_property
    def digest(self) -> Callable[[str], str]:
        """sha256 (hex) of a results file by name, each file hashed once."""
        done: dict[str, str] = {}

        def digest(name: str) -> str:
            if name not in done:
                done[name] = hashlib.sha256(self.files[name]).hexdigest()
            return done[name]

        return digest

    @functools.cached_property
    def manifest_digest(self) -> str:
        """sha256 (hex) of the manifest without what one sentence's change alters (its
        sentence list and the file sizes) and without the analysis date, with the number
        of sentences kept: the part of it that every figure may read. Computed once per
        site."""
        value = json.loads(self.files[MANIFEST])
        kept = {k: v for k, v in value.items() if k not in ("files", "sentences", "analysed")}
        kept["sentence_count"] = len(value.get("sentences") or [])
        text = json.dumps(kept, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(text.encode()).hexdigest()

    def texts(self) -> list[str]:
        """Every sentence's text, from the manifest (no sentence file is read)."""
        listed = {s.index: s.text for s in self.manifest.sentences}
        return [listed.get(i) or self.sentence(i).text for i in range(self.count)]

    def view(self, loaded: Sequence[SentenceResults]) -> Results:
        """``Results`` for drawing pages with only the ``loaded`` sentences in memory."""
        sentences = LoadedSentences(self.count, loaded)
        return Results(self.manifest, cast(tuple, sentences), self.set, self.interventions)


class FolderFiles(Mapping[str, bytes]):
    """The results files ``names`` of ``folder``, each read from disk when asked for."""

    def __init__(self, folder: Path, names: Sequence[str]) -> None:
        self._folder = folder
        self._names = sorted(names)
        self._known = set(names)

    def __getitem__(self, name: str) -> bytes:
        if name not in self._known:
            raise KeyError(name)
        return self._folder.joinpath(*name.split("/")).read_bytes()

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


class SiteFiles(Mapping[str, bytes]):
    """The assembled site: files drawn in memory plus the shipped results under ``prefix``
    (a lazy mapping), so the results are read one file at a time when written."""

    def __init__(self, drawn: Mapping[str, bytes], prefix: str, shipped: Mapping[str, bytes]):
        self._drawn = dict(drawn)
        self._prefix = prefix
        self._shipped = shipped
        self._names = sorted([*self._drawn, *(prefix + name for name in shipped)])

    def __getitem__(self, name: str) -> bytes:
        if name in self._drawn:
            return self._drawn[name]
        if name.startswith(self._prefix) and name[len(self._prefix) :] in self._shipped:
            return self._shipped[name[len(self._prefix) :]]
        raise KeyError(name)

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


def from_results(results: Results) -> SiteSource:
    """A source for results in memory; the site ships their canonical files."""
    sentences = results.sentences
    return SiteSource(
        results.manifest,
        results.set,
        results.interventions,
        len(sentences),
        lambda i: stored(sentences[i]),
        dump(results),
        kept=tuple(s.index for s in sentences),
    )


def from_folder(folder: str | Path) -> SiteSource:
    """A source for a complete results folder, checked before any page is drawn.

    The manifest's file list and sizes are checked against the disk and the set-wide
    files parsed now; a sentence file is parsed when its page is drawn. A folder of
    schema version 1 (no file list) is read whole, as it always was.
    """
    folder = Path(folder)
    where = f"{folder}/"
    if not folder.is_dir():
        raise AttnReportError(f"results folder {folder} does not exist")
    if not (folder / MANIFEST).is_file():
        return from_results(load(folder))  # load says what is wrong
    raw = read_part((folder / MANIFEST).read_bytes(), MANIFEST, where)
    listed = raw.get("files")
    if not isinstance(listed, dict):
        return from_results(load(folder))  # schema 1: no list of files to check
    layout = layout_of(raw, where + MANIFEST)
    sizes = {name: _size(folder, name) for name in listed}
    check_sizes({k: v for k, v in sizes.items() if v is not None}, listed, where)
    manifest = manifest_from_json(raw, where + MANIFEST)
    count = len(raw.get("sentences") or [])
    set_ = set_from_json(_read(folder, layout.set, where), where + layout.set)
    iv = None
    if layout.interventions in listed:
        name = layout.interventions
        iv = interventions_from_json(_read(folder, name, where), where + name)

    def sentence(index: int) -> SentenceResults:
        name = layout.sentence(index)
        return sentence_from_json(_read(folder, name, where), where + name, files)

    files = FolderFiles(folder, [MANIFEST, *listed])
    kept = kept_sentences(listed, count, layout)
    missing = [layout.sentence(i) for i in kept if layout.sentence(i) not in listed]
    if missing:
        raise AttnReportError(
            f"results folder {folder} is incomplete: {missing[0]} is missing; "
            "run attnreport analyze again"
        )
    return SiteSource(manifest, set_, iv, count, sentence, files, folder, layout, tuple(kept))


def _size(folder: Path, name: str) -> int | None:
    path = folder.joinpath(*name.split("/"))
    return path.stat().st_size if path.is_file() else None


def _read(folder: Path, name: str, where: str) -> object:
    return read_part(folder.joinpath(*name.split("/")).read_bytes(), name, where)
