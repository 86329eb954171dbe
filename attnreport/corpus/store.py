"""The results folder of a corpus run: the one place that writes it, file by file.

Every file is written atomically (a temporary file in the same folder, then a rename),
so a crash or SIGKILL leaves each file either whole or absent. Per finished sentence
the run writes ``sentences/NNN.json.gz`` (``docs/results-schema.md``; the names come
from ``results.layout.CURRENT``) and then ``partials/NNN.json`` (its ``SentencePartial``
at full precision, plain JSON: it is not shipped); the partial is written last, so it
marks the sentence as finished. ``run.json`` (the fingerprint) is written first,
``set.json.gz`` and ``interventions.json.gz`` when every sentence is finished, and
``manifest.json`` last: it lists every results file with its size, as
``attnreport.results.dump`` does, so ``attnreport.results.load`` accepts the folder only
once the run is complete. The fingerprint names the results schema, so a folder of an
older schema (plain ``.json`` sentences) is never resumed into.

Starting afresh in a folder attnreport wrote (or a foreign one with ``force``) empties
it first, as ``build`` replaces a site: what a run writes is removed, anything else moves
to the trash folder beside it (``output.set_aside``, named in one warning line);
``resume`` keeps it and returns the finished sentences.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from collections.abc import Iterator, Mapping
from dataclasses import replace
from pathlib import Path

from attnreport.corpus.fingerprint import RunFingerprint, difference
from attnreport.corpus.partial import SentencePartial
from attnreport.errors import AttnReportError
from attnreport.jsontypes import Json
from attnreport.output import set_aside
from attnreport.results import Manifest
from attnreport.results.io import dump_json
from attnreport.results.layout import CURRENT, MANIFEST, Layout
from attnreport.results.manifest import manifest_to_json
from attnreport.vocabulary import MARKER  # this folder is attnreport's

log = logging.getLogger(__name__)

RUN_FILE = "run.json"


# What a run writes into a results folder, in any schema version (its parts' names changed).
WRITTEN = frozenset(
    {MARKER, RUN_FILE, MANIFEST, "sentences", "partials"}
    | {
        part
        for v in range(1, CURRENT.version + 1)
        for part in (Layout(v).set, Layout(v).interventions)
    }
)


def written(name: str) -> bool:
    """Whether ``name``, an entry of a results folder, is one a run writes, or one of its
    temporary files."""
    return name in WRITTEN or name.startswith(".") and ".tmp-" in name


def sentence_name(index: int) -> str:
    return CURRENT.sentence(index)


def parts_folder(index: int) -> str:
    """The folder of sentence ``index``'s map parts (``results.map_parts``)."""
    return f"sentences/{index:03d}"


def partial_name(index: int) -> str:
    return f"partials/{index:03d}.json"


def write_file(out: Path, name: str, data: bytes) -> None:
    """Write ``out/name`` atomically (temporary file in the same folder, then rename).

    The only function that writes into a results folder; ``name`` is a relative POSIX path.
    """
    dest = out.joinpath(*name.split("/"))
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.tmp-{os.getpid()}")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, dest)
    finally:
        if tmp.exists():
            tmp.unlink()


class RunStore:
    """A results folder being filled by one run (``out`` must have passed ``check_output``);
    ``kept``: the sentences whose results file it holds (None: every sentence), the others
    only their partial."""

    def __init__(self, out: Path, kept: frozenset[int] | None = None) -> None:
        self.out = Path(out).expanduser().absolute()
        self.kept = kept

    def keeps(self, index: int) -> bool:
        return self.kept is None or index in self.kept

    def start(self, fingerprint: RunFingerprint, resume: bool) -> set[int]:
        """Prepare the folder; return the indices of sentences already finished (resume)."""
        stored = self._stored_fingerprint() if resume else None
        if stored is not None:
            why = difference(stored, fingerprint)
            if why is not None:
                raise AttnReportError(
                    f"cannot resume into {self.out}: {why}; rerun with the same settings or choose another --out"
                )
            self._remove_stale_temporaries()
            (self.out / MANIFEST).unlink(missing_ok=True)  # present only when complete
            return self._finished()
        self._empty()
        write_file(self.out, MARKER, b"attnreport results\n")
        write_file(self.out, RUN_FILE, dump_json(fingerprint))
        return set()

    def forget_sentences(self, indices: set[int], fingerprint: RunFingerprint) -> None:
        """Make a complete run of other sentences resumable as a run of ``fingerprint``
        (the same but for its sentences): the manifest goes first (the folder is then
        incomplete), then the files of sentences ``indices`` (changed, or past the new
        end), partial first; then ``run.json`` becomes ``fingerprint``. ``start(...,
        resume=True)`` then returns every other sentence as finished."""
        (self.out / MANIFEST).unlink(missing_ok=True)
        for index in sorted(indices):
            (self.out / partial_name(index)).unlink(missing_ok=True)
            (self.out / sentence_name(index)).unlink(missing_ok=True)
            shutil.rmtree(self.out / parts_folder(index), ignore_errors=True)
        write_file(self.out, RUN_FILE, dump_json(fingerprint))

    def stored_fingerprint(self) -> Json | None:  # as stored: read before it is trusted
        """The fingerprint in ``run.json``, or None when there is none."""
        return self._stored_fingerprint()

    def _stored_fingerprint(self) -> Json | None:  # as stored: read before it is trusted
        path = self.out / RUN_FILE
        if not path.is_file():
            return None
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, UnicodeDecodeError) as err:
            raise AttnReportError(f"cannot resume: {path} is unreadable ({err})") from err

    def _empty(self) -> None:
        """Remove what a run wrote here (``written``); anything else, and everything in a
        folder attnreport did not write (``force``), goes to the trash beside it."""
        set_aside(self.out, written)
        for entry in self.out.iterdir() if self.out.is_dir() else ():
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()

    def _remove_stale_temporaries(self) -> None:
        """Temporary files of a killed run (``write_file`` renames them when complete)."""
        for folder in (self.out, self.out / "sentences", self.out / "partials"):
            for path in folder.glob(".*.tmp-*") if folder.is_dir() else ():
                if path.is_file():
                    path.unlink()

    def _finished(self) -> set[int]:
        folder = self.out / "partials"
        done = set()
        for path in folder.glob("*.json") if folder.is_dir() else ():
            index = int(path.stem) if path.stem.isdigit() else None
            if index is not None and self._written(index):
                done.add(index)
        return done

    def _written(self, index: int) -> bool:
        """Whether sentence ``index``'s results file is there, or not kept (its partial is)."""
        return not self.keeps(index) or (self.out / sentence_name(index)).is_file()

    def partials(self, indices: set[int]) -> Iterator[SentencePartial]:
        """The stored partials of finished sentences, in index order."""
        for index in sorted(indices):
            path = self.out / partial_name(index)
            yield SentencePartial.from_json(json.loads(path.read_text(encoding="utf-8")))

    def write_sentence(
        self, index: int, data: Mapping[str, bytes] | None, partial: SentencePartial
    ) -> None:
        """Sentence ``index``'s results files (``data``: name -> bytes as written, its map
        parts before ``sentences/NNN.json.gz``; None: the sentence is not kept, it has
        none), then its partial, which marks it finished."""
        for name, content in (data or {}).items():
            write_file(self.out, name, content)
        write_file(self.out, partial_name(index), dump_json(partial.to_json()))

    def finish(self, files: Mapping[str, bytes], manifest: Manifest, count: int) -> None:
        """The set-wide ``files``, then the manifest listing them and the kept ones of the
        ``count`` sentences' files with their sizes (``manifest.files``, as
        ``results.dump`` does)."""
        for name in sorted(files):
            write_file(self.out, name, files[name])
        sizes = {name: len(data) for name, data in files.items()}
        for index in filter(self.keeps, range(count)):
            name = sentence_name(index)
            sizes[name] = (self.out / name).stat().st_size
            for part in sorted((self.out / parts_folder(index)).glob("l*.js")):
                sizes[part.relative_to(self.out).as_posix()] = part.stat().st_size
        listed = replace(manifest, files=dict(sorted(sizes.items())))
        write_file(self.out, MANIFEST, dump_json(manifest_to_json(listed)))

    def add_files(self, files: Mapping[str, bytes]) -> None:
        """Set-wide ``files`` a complete folder was finished without (``serve --watch``
        leaves the intervention grids for after the site is up), then the manifest again,
        listing them too: until that last write the folder is the complete one without
        them, so a reader never finds a listed file missing or a file of other inputs listed."""
        raw = json.loads((self.out / MANIFEST).read_text(encoding="utf-8"))
        for name in sorted(files):
            write_file(self.out, name, files[name])
        sizes = {**raw["files"], **{name: len(data) for name, data in files.items()}}
        raw["files"] = dict(sorted(sizes.items()))
        write_file(self.out, MANIFEST, dump_json(raw))

    def count(self) -> int:
        return sum(1 for p in self.out.rglob("*") if p.is_file())
