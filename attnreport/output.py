"""Write an assembled site to disk, replacing the previous one only when complete.

This is the only code that touches the output folder. The new site is written into a
temporary folder beside the target (same parent, so renames stay on one file system),
named ``.attnreport-tmp-new-PID-RANDOM``. Only when every file is written is it swapped
in: with one atomic ``renameat2(RENAME_EXCHANGE)`` on Linux, else with two renames (the
old site is first moved to ``.attnreport-tmp-old-PID-TAG``). An exception, Ctrl-C or
SIGTERM removes the temporary folder; a SIGKILL leaves it behind, and the next build
removes it (or, if the kill fell between the two renames, moves the old site back).

``force`` replaces a folder attnreport did not write, but never deletes it silently: a
warning lists what it held, a folder holding ``.git`` is refused, and the old content is
moved to the sibling ``.attnreport-trash-NAME``, which the next write of NAME removes.
A results folder, refilled in place file by file (``corpus.store``), empties itself through
``set_aside``: what attnreport did not write goes to the same trash, named in one warning
line. No writer deletes an entry attnreport did not write.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import hashlib
import logging
import os
import secrets
import shutil
import signal
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from attnreport.errors import AttnReportError
from attnreport.vocabulary import MARKER

if TYPE_CHECKING:
    from attnreport.config import Settings

TMP_PREFIX = ".attnreport-tmp-"
TRASH_PREFIX = ".attnreport-trash-"
LISTED = 8  # entries a --force warning names before "and N more"

log = logging.getLogger(__name__)


def trash_path(target: Path) -> Path:
    """Where ``--force`` moves a foreign folder's old content (beside it, same file system)."""
    return target.parent / f"{TRASH_PREFIX}{target.name}"


def foreign_entries(target: Path) -> list[str]:
    """The entries of ``target`` when it is a non-empty folder attnreport did not write
    (folders with a trailing ``/``), sorted; [] otherwise."""
    if not target.is_dir() or (target / MARKER).is_file():
        return []
    return sorted(p.name + ("/" if p.is_dir() else "") for p in target.iterdir())


def _listing(entries: list[str]) -> str:
    more = len(entries) - LISTED
    return ", ".join(entries[:LISTED]) + (f" and {more} more" if more > 0 else "")


def _tag(target: Path) -> str:
    return hashlib.sha256(target.name.encode("utf-8", "surrogateescape")).hexdigest()[:12]


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


def clean_stale(parent: Path, target: Path) -> None:
    """Remove temporary folders left by killed builds; restore an old site caught mid-swap."""
    for entry in sorted(parent.glob(TMP_PREFIX + "*")):
        fields = entry.name[len(TMP_PREFIX) :].split("-")
        if len(fields) != 3 or not fields[1].isdigit() or _pid_alive(int(fields[1])):
            continue
        if fields[0] == "old" and fields[2] == _tag(target) and not os.path.lexists(target):
            os.rename(entry, target)  # killed between the two renames: put the old site back
        elif fields[0] in ("new", "old") and entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)


def check_target(target: Path, force: bool) -> None:
    """Refuse targets that are files, dangerous folders, or foreign folders without force."""
    if os.path.lexists(target) and not target.is_dir():
        raise AttnReportError(f"output path {target} is a file, not a folder; choose another path")
    if not target.is_dir():
        return
    if not any(target.iterdir()) or (target / MARKER).is_file():
        return
    if not force:
        raise AttnReportError(
            f"output folder {target} is not empty and was not written by attnreport "
            f"({_listing(foreign_entries(target))}); choose an empty folder or pass --force "
            f"to replace it (its content is moved to {trash_path(target)})"
        )
    if (target / ".git").exists():
        raise AttnReportError(
            f"refusing to replace {target} even with --force: it holds a .git folder (a "
            "repository); choose another output folder, e.g. a subfolder"
        )
    real = target.resolve()
    if real in (Path(real.anchor), Path.home().resolve()) or Path.cwd().resolve().is_relative_to(
        real
    ):
        raise AttnReportError(f"refusing to replace {target} even with --force; choose a subfolder")


def _safe_relpath(name: str) -> PurePosixPath:
    path = PurePosixPath(name)
    if (
        not name
        or path.is_absolute()
        or "\\" in name
        or "\0" in name
        or any(p in ("", ".", "..") for p in name.split("/"))
    ):
        raise ValueError(f"unsafe site path {name!r}")
    return path


def _make_tmp(parent: Path, kind: str, suffix: str) -> Path:
    while True:
        path = parent / f"{TMP_PREFIX}{kind}-{os.getpid()}-{suffix or secrets.token_hex(6)}"
        try:
            os.mkdir(path)
            return path
        except FileExistsError:
            if suffix:
                raise


def _fill(tmp: Path, files: Mapping[str, bytes]) -> None:
    for name in sorted(files):
        dest = tmp.joinpath(*_safe_relpath(name).parts)
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(files[name])


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two paths (Linux renameat2); False where the system cannot."""
    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    if fn(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP):
        return False
    raise OSError(err, os.strerror(err), str(a))


def _discard(old: Path, keep: Path | None) -> None:
    """Remove the replaced content ``old``, or move it to ``keep`` (a fresh path)."""
    if keep is None:
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.rename(old, keep)


def _swap_in(tmp: Path, target: Path, keep: Path | None = None) -> None:
    """Put ``tmp`` at ``target``; the previous ``target`` is removed afterwards, or moved
    to ``keep`` when given."""
    if not os.path.lexists(target):
        os.rename(tmp, target)
        return
    if _exchange(tmp, target):
        _discard(tmp, keep)  # tmp now holds the previous site
        return
    old = target.parent / f"{TMP_PREFIX}old-{os.getpid()}-{_tag(target)}"
    os.rename(target, old)
    try:
        os.rename(tmp, target)
    except BaseException:
        os.rename(old, target)
        raise
    _discard(old, keep)


class _Interrupt(KeyboardInterrupt):
    """SIGTERM while writing: unwinds like Ctrl-C so the temporary folder is removed."""


@contextlib.contextmanager
def _sigterm_unwinds() -> Iterator[list[bool]]:
    """Turn SIGTERM into ``_Interrupt``; while the yielded flag is set, defer it."""
    critical = [False]
    pending: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield critical
        return

    def handler(signum: int, _frame: object) -> None:
        if critical[0]:
            pending.append(signum)
        else:
            raise _Interrupt(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield critical
    finally:
        signal.signal(signal.SIGTERM, previous)
    if pending:
        raise _Interrupt(f"signal {pending[0]}")


def write_site(files: Mapping[str, bytes], out_dir: Path, force: bool = False) -> Path:
    """Write ``files`` ({relative POSIX path: bytes}) as the folder ``out_dir``; return it.

    The previous content of ``out_dir`` stays whole until the new site is complete. Raises
    ``AttnReportError`` for a file in the way, an unwritable parent, or a non-empty folder
    without the ``.attnreport-site`` marker (unless ``force``).
    """
    target = Path(out_dir).expanduser().absolute()
    if target.is_symlink() and target.is_dir():
        target = target.resolve()
    parent = target.parent
    try:
        if parent.is_dir():
            clean_stale(parent, target)
        check_target(target, force)
        parent.mkdir(parents=True, exist_ok=True)
        _write_and_swap(files, parent, target, _trash_for(target))
    except (NotADirectoryError, FileExistsError) as err:
        raise AttnReportError(
            f"cannot write the site to {target}: {err.filename} is a file, not a folder"
        ) from err
    except OSError as err:
        reason = err.strerror or str(err)
        raise AttnReportError(
            f"cannot write the site to {target}: {reason}; choose a folder you can write to"
        ) from err
    return target


def _fresh_trash(target: Path) -> Path:
    """``trash_path(target)``, emptied of last time's content (the warning then said that
    the next write of ``target`` removes it)."""
    trash = trash_path(target)
    if os.path.lexists(trash):
        shutil.rmtree(trash, ignore_errors=True)
    return trash


def _say_moved(lead: str, entries: list[str], trash: Path) -> None:
    """The one warning line of every move to the trash: ``lead``, then what moved where."""
    log.warning(
        "%s: %s; moved to %s (removed by the next write there)", lead, _listing(entries), trash
    )


def _trash_for(target: Path) -> Path | None:
    """For a foreign folder being replaced (``force``): a fresh trash path beside it, the
    warning that names what moves there. Otherwise None, and last time's trash is pruned."""
    trash = _fresh_trash(target)
    entries = foreign_entries(target)
    if not entries:
        return None
    _say_moved(f"replacing {target}, which attnreport did not write", entries, trash)
    return trash


def set_aside(target: Path, ours: Callable[[str], bool]) -> list[str]:
    """Before a writer empties the folder ``target`` to refill it in place (a results
    folder, written file by file): move every entry that is not ``ours(name)`` (all of
    them in a folder without the marker) into a fresh trash folder beside it, and say so
    in one warning line. Last time's trash is pruned. Returns the entries moved, sorted
    (folders with a trailing ``/``)."""
    trash = _fresh_trash(target)
    if not target.is_dir():
        return []
    marked = (target / MARKER).is_file()
    names = sorted(p.name for p in target.iterdir() if not (marked and ours(p.name)))
    if not names:
        return []
    trash.mkdir()
    for name in names:
        os.rename(target / name, trash / name)
    entries = sorted(n + ("/" if (trash / n).is_dir() else "") for n in names)
    lead = f"{target} holds entries attnreport did not write" if marked else None
    _say_moved(lead or f"replacing {target}, which attnreport did not write", entries, trash)
    return entries


def _write_and_swap(
    files: Mapping[str, bytes], parent: Path, target: Path, keep: Path | None = None
) -> None:
    """Fill a fresh temporary folder, then swap it in (the old content removed, or moved to
    ``keep``); the temporary folder never outlives an error."""
    with _sigterm_unwinds() as critical:
        tmp = _make_tmp(parent, "new", "")
        try:
            _fill(tmp, files)
            critical[0] = True
            _swap_in(tmp, target, keep)
        finally:
            critical[0] = False
            if os.path.lexists(tmp):
                shutil.rmtree(tmp, ignore_errors=True)


def check_output(out: Path, inputs: list[Path], force: bool) -> None:
    """Refuse a bad output folder before any work: what the writer would refuse (a file,
    a foreign folder without ``force``), one that holds an input (the swap would remove
    it), and the file system root or the home folder."""
    check_target(out, force)
    out = out.expanduser().resolve()
    for source in inputs:
        source = source.expanduser().resolve()
        if source == out or out in source.parents:
            raise AttnReportError(
                f"output folder {out} contains the input {source}; choose another --out"
            )
    if out == Path.home().resolve() or out == Path(out.anchor):
        raise AttnReportError(
            f"refusing to use {out} as the output folder; choose a folder of its own"
        )


def input_paths(settings: Settings) -> list[Path]:
    """The files a run reads (its sentences, a local model): the output may not hold them."""
    paths = [Path(settings.sentences)] if settings.sentences else []
    model = Path(settings.model).expanduser()
    return paths + ([model] if settings.model != "default" and model.exists() else [])
