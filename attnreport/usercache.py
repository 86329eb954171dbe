"""The user cache folder, shared by every cache of attnreport (models, static images,
built figures), and the size limit of the caches that grow with every render.

Kept apart from the model loader so that code which never touches a model (rendering a
site from results) can find the cache without importing torch.

``figures/`` and ``images/`` gain entries whenever a figure's inputs or attnreport's code
change, and nothing else removes them, so after a render ``prune`` deletes their least
recently used entries (a hit sets an entry's modification time) once the two together
pass ``ATTNREPORT_CACHE_LIMIT_MB`` (default ``DEFAULT_LIMIT_MB``), down to
``PRUNE_TO`` of it. The models (``models/``) are never pruned: they are few, and
dequantising one again is slow.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

log = logging.getLogger(__name__)

DEFAULT_LIMIT_MB = 2048
PRUNE_TO = 0.8  # a prune leaves at most this share of the limit, so it is rarely needed
PRUNED = ("figures", "images")  # the folders of entries ``KEY[:2]/KEY.bin`` that grow
STALE_TMP_S = 24 * 3600  # a temporary file this old was left by a process that died


def cache_dir() -> Path:
    """``$ATTNREPORT_CACHE``, else ``$XDG_CACHE_HOME/attnreport``, else ``~/.cache/attnreport``."""
    if os.environ.get("ATTNREPORT_CACHE"):
        return Path(os.environ["ATTNREPORT_CACHE"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base).expanduser() / "attnreport"


def limit_bytes() -> int:
    """``ATTNREPORT_CACHE_LIMIT_MB`` (a whole number of MB) in bytes, else the default."""
    text = os.environ.get("ATTNREPORT_CACHE_LIMIT_MB", "").strip()
    if text and not text.isdigit():
        log.warning(
            "ATTNREPORT_CACHE_LIMIT_MB=%r is not a whole number; using %d", text, DEFAULT_LIMIT_MB
        )
    megabytes = int(text) if text.isdigit() else DEFAULT_LIMIT_MB
    return megabytes * 1024 * 1024


def prune(root: Path | None = None, limit: int | None = None) -> int:
    """Delete the least recently used entries of ``root``'s growing caches until they hold
    at most ``PRUNE_TO`` of ``limit`` bytes, when they hold more than ``limit``; delete
    temporary files older than a day. Returns the bytes freed. Never raises on I/O: an
    entry another process removed or is writing is skipped."""
    root = cache_dir() if root is None else root
    limit = limit_bytes() if limit is None else limit
    entries, freed, now = [], 0, time.time()
    for folder in PRUNED:
        for path in _files(root / folder):
            try:
                stat = path.stat()
            except OSError:
                continue
            if path.name.startswith(".tmp-"):
                if now - stat.st_mtime > STALE_TMP_S:
                    freed += _remove(path, stat.st_size)
            elif path.suffix == ".bin":
                entries.append((stat.st_mtime, path.as_posix(), stat.st_size))
    total = sum(size for _, _, size in entries)
    if total <= limit:
        return freed
    keep = int(limit * PRUNE_TO)
    for _, name, size in sorted(entries):  # oldest use first
        if total <= keep:
            break
        removed = _remove(Path(name), size)
        total -= removed
        freed += removed
    log.info("cache: removed %.1f MB of least recently used entries from %s", freed / 1e6, root)
    return freed


def _files(folder: Path) -> list[Path]:
    """The files one level below ``folder``'s subfolders (``KEY[:2]/KEY.bin``); a folder
    that cannot be listed (or vanished meanwhile) gives none."""
    found = []
    try:
        subfolders = [sub for sub in folder.iterdir() if sub.is_dir()]
    except OSError:
        return []
    for sub in subfolders:
        try:
            found += sub.iterdir()
        except OSError:
            continue
    return found


def _remove(path: Path, size: int) -> int:
    try:
        path.unlink()
    except OSError:
        return 0
    return size
