"""Figures drawn before are read back, not built again: the figure cache.

Building a figure (Altair chart, Vega-Lite spec, rows) and encoding it for the page (the
payload and its data files) is most of ``render``. Both are pure functions of the
results files the figure reads and of the code, so a figure is stored under a key made of:

- the figure's registry key and page (``FigureEntry.key``; the sentence's index is in
  its file), whether the page shows the intervention grids and, on the index, the
  sentence pages its figures link to (``Inputs.pages``);
- the sha256 of every results file its registry entry reads (``FigureEntry.reads``: the
  page's sentence file, the set and interventions files and, for the intervention
  grids, the files of the sentences they ran on: the bytes on disk, gzip-compressed from
  schema version 4, so the same folder gives the same keys), and of the manifest
  without its per-sentence list and file sizes (``SiteSource.manifest_digest``), so that
  changing one sentence rebuilds only the figures that read it;
- ``code_version()``: the bytes of attnreport's own modules and the versions of Python
  and Altair.

An entry (``cache_dir()/figures/KEY[:2]/KEY.bin``, the image cache's checked format) holds
the figure without its rows (``Figure.inline`` and ``chunks`` emptied: the page needs
only its key, title, caption and static spec) and its encoded payload and data files.
A site whose figures were all made once is remembered too (``remember_site``), under a
key of its own, so that a later render of it knows at once there is nothing to make.
A damaged or unreadable entry is ignored and rewritten. The cache is the user's own
folder, like the model cache; its entries are pickles written by this module.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import logging
import pickle
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import attnreport
from attnreport.charts.export.image_cache import ImageCache
from attnreport.charts.figure import Encoded, Figure
from attnreport.charts.registry import FigureEntry, Inputs, Placed, place

log = logging.getLogger(__name__)

FORMAT = 1  # bump when the pickled entry changes shape
SITE_MARK = b"attnreport: every figure of this site is cached"  # ``remember_site``'s entry


@functools.cache
def code_version() -> str:
    """sha256 of every module of the installed attnreport plus the Python, Altair and
    vl-convert versions: any change to a builder, the theme or the encoders changes every key."""
    digest = hashlib.sha256(f"format {FORMAT}; python {sys.version_info[:2]}".encode())
    for package in ("altair", "vl-convert-python"):  # the specs, and their compiled Vega
        try:
            digest.update(f"{package} {importlib.metadata.version(package)}".encode())
        except importlib.metadata.PackageNotFoundError:
            digest.update(f"{package} ?".encode())
    root = Path(attnreport.__file__).resolve().parent
    for path in sorted(root.rglob("*.py")) + sorted(root.rglob("*.js")):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes())
    return digest.hexdigest()


@dataclass(frozen=True)
class PageFiles:
    """What the figures of one page may read, as digests: ``sentence`` (the page's
    sentence file; None on the index), ``iv_inputs`` (the files of the sentences the
    interventions ran on), ``set`` and ``interventions`` (their files, named by the
    folder's ``Layout``), and the digest function of the results files."""

    digest: Callable[[str], str]
    manifest: str  # ``SiteSource.manifest_digest``
    sentence: str | None
    iv_inputs: tuple[str, ...]
    set: str
    interventions: str

    def key(self, entry: FigureEntry, inputs: Inputs) -> str:
        """The cache key of ``entry``'s figure drawn from ``inputs`` on this page
        (``code_version`` first)."""
        parts = [code_version(), entry.key, entry.page, str(inputs.show_interventions)]
        parts.append(repr(inputs.pages))
        parts.append(self.manifest)
        for source in sorted({read.split(":")[0] for read in entry.reads}):
            if source == "sentence" and self.sentence is not None:
                parts.append(self.digest(self.sentence))
            elif source == "set":
                parts.append(self.digest(self.set))
            elif source == "interventions":
                parts += [self.digest(self.interventions)]
                parts += [self.digest(name) for name in self.iv_inputs]
        return hashlib.sha256("\n".join(parts).encode()).hexdigest()


class FigureCache:
    """Built and encoded figures under ``root`` (normally ``cache_dir()/figures``)."""

    def __init__(self, root: Path) -> None:
        self._store = ImageCache(root)

    def get(self, key: str) -> tuple[Figure, Encoded] | None:
        entry = self._store.get(key)
        if entry is None:
            return None
        try:
            figure, encoded = pickle.loads(entry[0])
        except Exception as error:  # an entry another version wrote, or damaged
            log.info("figure cache entry %s is unreadable (%s); building again", key, error)
            return None
        if not isinstance(figure, Figure) or not isinstance(encoded, Encoded):
            return None
        return figure, encoded

    def put(self, key: str, figure: Figure, encoded: Encoded) -> None:
        light = replace(figure, inline={}, chunks={})
        self._store.put(key, pickle.dumps((light, encoded), protocol=5), b"")

    def holds_site(self, key: str) -> bool:
        """Whether ``remember_site(key)`` was called: every figure of that site is here."""
        return self._store.get(key) == (SITE_MARK, b"")

    def remember_site(self, key: str) -> None:
        self._store.put(key, SITE_MARK, b"")

    def figure(
        self, key: str, build: Callable[[], Figure], encode: Callable[[Figure], Encoded]
    ) -> tuple[Figure, Encoded]:
        """The entry of ``key``, or ``build()`` encoded and stored under it."""
        found = self.get(key)
        if found is not None:
            return found
        figure = build()
        encoded = encode(figure)
        self.put(key, figure, encoded)
        return figure, encoded


def cached_maker(
    cache: FigureCache, page: PageFiles, encode: Callable[[Figure], Encoded]
) -> Callable[[FigureEntry, Inputs], Placed]:
    """A ``registry.build_figures`` maker that reads ``page``'s figures from ``cache`` and
    builds, encodes and stores the ones it does not hold."""

    def make(entry: FigureEntry, inputs: Inputs) -> Placed:
        figure, encoded = cache.figure(
            page.key(entry, inputs), lambda: place(entry, inputs).figure, encode
        )
        return Placed(entry, figure, encoded)

    return make


def default_cache() -> FigureCache:
    """The user's figure cache, ``cache_dir()/figures`` (see ``attnreport.usercache``)."""
    from attnreport.usercache import cache_dir

    return FigureCache(cache_dir() / "figures")
