"""The files of a results folder: their names in each schema version, and their encoding.

Version 4 writes each part as gzip-compressed canonical JSON (``set.json.gz``,
``interventions.json.gz``, ``sentences/NNN.json.gz``); versions 1 to 3 wrote plain
``.json``. ``manifest.json`` is plain JSON in every version: its ``schema`` says which
version, so which names, the folder uses, and its ``files`` lists them with their sizes on
disk (compressed). This module is the one place that knows the names and the encoding;
``Layout(version)`` answers for a folder, ``CURRENT`` for what ``dump`` writes.
"""

from __future__ import annotations

import gzip
import json
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from attnreport.errors import AttnReportError
from attnreport.results.manifest import SCHEMA_VERSION

MANIFEST = "manifest.json"
GZIP_SINCE = 4  # the first schema version whose parts are gzip-compressed
GZIP = ".gz"
PARTS_SINCE = 10  # the first schema version whose maps are in part files (``map_parts``)


@dataclass(frozen=True)
class Layout:
    """The file names of a results folder of schema ``version`` (besides ``MANIFEST``)."""

    version: int = SCHEMA_VERSION

    @property
    def compressed(self) -> bool:
        return self.version >= GZIP_SINCE

    @property
    def suffix(self) -> str:
        return ".json" + GZIP if self.compressed else ".json"

    @property
    def format(self) -> str:
        """What a part file holds, for readers: "gzip-compressed JSON" or "JSON"."""
        return "gzip-compressed JSON" if self.compressed else "JSON"

    def part(self, stem: str) -> str:
        """The file of part ``stem`` ("set", "interventions", "sentences/007")."""
        return stem + self.suffix

    @property
    def set(self) -> str:
        return self.part("set")

    @property
    def interventions(self) -> str:
        return self.part("interventions")

    def sentence(self, index: int) -> str:
        return self.part(f"sentences/{index:03d}")

    def source(self, source: str, index: int | None = None) -> str:
        """The file a figure's ``FigureEntry.source`` names: "sentence" (sentence
        ``index``'s), "set" or "interventions"."""
        if source == "sentence" and index is not None:
            return self.sentence(index)
        return self.part(source)

    def holds(self, name: str) -> bool:
        """Whether ``name`` is a results file of this layout (the manifest, a part, or
        since version 10 a sentence's map part ``sentences/NNN/lL.js``)."""
        return name == MANIFEST or name.endswith(self.suffix) or self.is_map_part(name)

    def is_map_part(self, name: str) -> bool:
        """Whether ``name`` is a sentence's map part file (``results.map_parts``)."""
        return (
            self.version >= PARTS_SINCE and name.startswith("sentences/") and name.endswith(".js")
        )

    def encode(self, data: bytes | bytearray) -> bytes:
        """A part's file bytes from its canonical JSON bytes."""
        return compress(data) if self.compressed else bytes(data)


CURRENT = Layout()


def compress(data: bytes | bytearray) -> bytes:
    """gzip of canonical JSON: level 6, no file name, mtime 0, so the same JSON gives the
    same bytes with the same zlib. Another zlib build (zlib-ng) may compress the same JSON
    to other bytes: compare results by their JSON (``compare``), never by these bytes.
    Level 6, zlib's default: on a 7.3 MB sentence file 1% larger than level 9 and twice
    as fast (0.68 s against 1.49 s), which long inputs and corpora feel."""
    return gzip.compress(data, compresslevel=6, mtime=0)


def decode(data: bytes, name: str, where: str) -> bytes:
    """The JSON bytes of results file ``name`` (gunzipped when it ends in ``.gz``); a
    damaged gzip stream is a one-line error naming ``where``."""
    if not name.endswith(GZIP):
        return data
    try:
        return gzip.decompress(data)
    except (EOFError, zlib.error, gzip.BadGzipFile) as err:
        raise AttnReportError(
            f"{where} is truncated or not valid gzip-compressed JSON ({err})"
        ) from err


def is_results_file(name: str) -> bool:
    """A results file of any layout: ``.json``, ``.json.gz`` or (a map part) ``.js``."""
    return name.endswith((".json", ".json" + GZIP, ".js"))


def read_json(path: str | Path) -> Any:
    """The JSON value of one results file as it lies on disk, gunzipped when ``.gz``
    (no schema check: ``load`` reads whole folders)."""
    path = Path(path)
    return json.loads(decode(path.read_bytes(), path.name, str(path)))
