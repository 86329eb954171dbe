"""Notice saves by polling: a snapshot of the watched files' sizes and modification
times, taken a few times a second and compared with the last one.

Polling needs no dependency and works on every file system (network mounts and
containers included, where inotify does not reach); a snapshot of a few hundred
files costs well under a millisecond per poll. A changed snapshot is reported once
it has stayed the same for ``SETTLE_S`` (an editor's save is often a truncate then a
write, or a write to a temporary file then a rename), so one save is one build.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

POLL_S = 0.1  # seconds between snapshots
SETTLE_S = 0.15  # a change is reported once the snapshot holds still this long
DIGEST_BELOW = 1 << 20  # a file named itself (not a folder) this small is also hashed

Snapshot = dict[str, tuple[int, int, str]]  # path -> (mtime in ns, size, digest); -1: missing


def _entry(path: Path, digest: bool = False) -> tuple[int, int, str]:
    """``path``'s modification time and size, and with ``digest`` (when it is small) a
    hash of its bytes: a same-size edit on a file system with coarse times is seen too."""
    try:
        stat = path.stat()
        small = digest and stat.st_size < DIGEST_BELOW
        text = hashlib.blake2b(path.read_bytes(), digest_size=16).hexdigest() if small else ""
    except OSError:
        return (-1, -1, "")
    return (stat.st_mtime_ns, stat.st_size, text)


def snapshot(paths: Iterable[Path]) -> Snapshot:
    """Every file under ``paths`` (a file, or a folder walked whole, hidden temporary
    files of atomic writers skipped) with its modification time and size (and digest)."""
    found: Snapshot = {}
    for path in paths:
        if not path.is_dir():
            found[str(path)] = _entry(path, digest=True)
            continue
        for root, dirs, files in os.walk(path):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            for name in files:
                if not (name.startswith(".") and ".tmp-" in name):
                    found[os.path.join(root, name)] = _entry(Path(root, name))
    return found


def changed_kinds(before: Mapping[str, Snapshot], after: Mapping[str, Snapshot]) -> list[str]:
    """The kinds (``config``, ``sentences``...) whose snapshots differ, in ``after``'s order."""
    return [kind for kind in after if before.get(kind) != after[kind]]


class Watcher:
    """Snapshots of the watched files by kind; ``wait`` blocks until some kind changed."""

    def __init__(self, watched: Callable[[], Mapping[str, list[Path]]]) -> None:
        self.watched = watched  # what to watch now (the sentences file may move)
        self.seen = self.take()

    def take(self) -> dict[str, Snapshot]:
        return {kind: snapshot(paths) for kind, paths in self.watched().items()}

    def absorb(self, kind: str) -> None:
        """Accept the current state of ``kind`` as seen (the build wrote it itself)."""
        self.seen[kind] = snapshot(self.watched()[kind])

    def pending(self) -> bool:
        """Whether anything but the results changed since the last ``wait``."""
        return bool([k for k in changed_kinds(self.seen, self.take()) if k != "results"])

    def wait(self, stop: Callable[[], bool] = lambda: False) -> list[str]:
        """Block until a change has settled; the kinds that changed ([] when ``stop``)."""
        while not stop():
            time.sleep(POLL_S)
            now = self.take()
            if not changed_kinds(self.seen, now):
                continue
            settled = time.perf_counter() + SETTLE_S
            while time.perf_counter() < settled and not stop():
                time.sleep(POLL_S / 2)
                later = self.take()
                if later != now:
                    now, settled = later, time.perf_counter() + SETTLE_S
            kinds = changed_kinds(self.seen, now)
            self.seen = now
            if kinds:
                return kinds
        return []
