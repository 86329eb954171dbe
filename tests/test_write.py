"""write_site: the previous site survives every failure; foreign folders are refused."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from attnreport import output as write
from attnreport.errors import AttnReportError
from attnreport.output import MARKER, TMP_PREFIX, write_site
from tests.patience import patience

OLD = {MARKER: b"", "index.html": b"<p>old</p>", "assets/a.css": b"old", "gone.html": b"x"}
NEW = {MARKER: b"", "index.html": b"<p>new</p>", "assets/a.css": b"new", "deep/er/f.js": b"1"}


def tree(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` as {relative POSIX path: bytes}."""
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def temps(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if p.name.startswith(TMP_PREFIX))


class Failing(Mapping[str, bytes]):
    """A site whose ``n``-th file cannot be produced (raises ``error``)."""

    def __init__(self, files: Mapping[str, bytes], n: int, error: BaseException) -> None:
        self.files, self.n, self.error = dict(files), n, error

    def __getitem__(self, key: str) -> bytes:
        if sorted(self.files).index(key) >= self.n:
            raise self.error
        return self.files[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.files)

    def __len__(self) -> int:
        return len(self.files)


@pytest.fixture
def site(tmp_path: Path) -> Path:
    out = tmp_path / "site"
    write_site(OLD, out)
    assert tree(out) == OLD
    return out


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_writes_fresh_and_replaces_whole(site: Path):
    write_site(NEW, site)
    assert tree(site) == NEW  # gone.html is gone
    assert temps(site.parent) == []


def test_writes_into_missing_parents_and_empty_folder(tmp_path: Path):
    write_site(NEW, tmp_path / "a" / "b" / "site")
    assert tree(tmp_path / "a" / "b" / "site") == NEW
    (tmp_path / "empty").mkdir()
    write_site(NEW, tmp_path / "empty")
    assert tree(tmp_path / "empty") == NEW


@pytest.mark.parametrize("error", [RuntimeError("boom"), KeyboardInterrupt()])
def test_failure_mid_write_keeps_previous_site(site: Path, error: BaseException):
    with pytest.raises(type(error)):
        write_site(Failing(NEW, 2, error), site)
    assert tree(site) == OLD
    assert temps(site.parent) == []


def test_unsafe_path_keeps_previous_site(site: Path):
    for bad in ("../escape.html", "/abs.html", "a/../../b", "a\\b", ""):
        with pytest.raises(ValueError, match="unsafe site path"):
            write_site({**NEW, bad: b"x"}, site)
    assert tree(site) == OLD
    assert not (site.parent / "escape.html").exists()


def test_refuses_foreign_folder_unless_forced(tmp_path: Path):
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "thesis.tex").write_text("precious")
    with pytest.raises(AttnReportError) as err:
        write_site(NEW, foreign)
    message = str(err.value)
    assert str(foreign) in message and "--force" in message and "\n" not in message
    assert (foreign / "thesis.tex").read_text() == "precious"
    write_site(NEW, foreign, force=True)
    assert tree(foreign) == NEW


def test_force_never_replaces_the_working_folder(tmp_path: Path, monkeypatch):
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "notes.txt").write_text("keep")
    monkeypatch.chdir(tmp_path / "work")
    with pytest.raises(AttnReportError, match="refusing"):
        write_site(NEW, Path("."), force=True)
    assert (tmp_path / "work" / "notes.txt").read_text() == "keep"


def test_output_path_that_is_a_file(tmp_path: Path):
    path = tmp_path / "report.html"
    path.write_text("x")
    with pytest.raises(AttnReportError, match="is a file"):
        write_site(NEW, path)
    with pytest.raises(AttnReportError, match="is a file"):
        write_site(NEW, path / "site")
    assert path.read_text() == "x"


def test_unwritable_parent(tmp_path: Path):
    if os.geteuid() == 0:
        target = Path("/sys/attnreport-test-site")  # not writable even by root
    else:
        locked = tmp_path / "locked"
        locked.mkdir()
        locked.chmod(0o500)
        target = locked / "site"
    with pytest.raises(AttnReportError, match="cannot write the site") as err:
        write_site(NEW, target)
    assert str(target) in str(err.value) and "\n" not in str(err.value)


def test_stale_temp_folders_are_removed(site: Path):
    dead, alive = dead_pid(), os.getppid()
    stale = site.parent / f"{TMP_PREFIX}new-{dead}-0a0a0a"
    busy = site.parent / f"{TMP_PREFIX}new-{alive}-0b0b0b"
    for folder in (stale, busy):
        (folder / "assets").mkdir(parents=True)
        (folder / "assets" / "half.js").write_text("half")
    write_site(NEW, site)
    assert not stale.exists() and busy.exists()  # a live build's folder is left alone
    assert tree(site) == NEW


def test_old_site_caught_between_renames_is_restored(site: Path):
    old = site.parent / f"{TMP_PREFIX}old-{dead_pid()}-{write._tag(site)}"
    site.rename(old)  # as if killed after moving the old site aside
    write.clean_stale(site.parent, site)
    assert tree(site) == OLD and not old.exists()


def test_swap_without_atomic_exchange(site: Path, monkeypatch):
    monkeypatch.setattr(write, "_exchange", lambda a, b: False)
    write_site(NEW, site)
    assert tree(site) == NEW and temps(site.parent) == []


def test_symlinked_output_folder_is_followed(site: Path, tmp_path: Path):
    link = tmp_path / "link"
    link.symlink_to(site, target_is_directory=True)
    write_site(NEW, link)
    assert link.is_symlink() and tree(site) == NEW


CHILD = """
import sys, time
from pathlib import Path
from attnreport.output import write_site

class Slow(dict):
    def __getitem__(self, key):
        time.sleep(0.002)
        return dict.__getitem__(self, key)

files = Slow({f"pages/{i // 100:03d}/p{i:05d}.html": bytes(4096) for i in range(20000)})
files[".attnreport-site"] = b""
write_site(files, Path(sys.argv[1]))
"""


def start_child_and_wait_for_files(site: Path, min_files: int = 30) -> subprocess.Popen:
    """A real process writing a big, slow site; returns once its temp folder has files."""
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root)}
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(site)], env=env)
    deadline = time.monotonic() + patience(60)
    while time.monotonic() < deadline:
        tmp = [p for p in site.parent.glob(TMP_PREFIX + "new-*")]
        if tmp and sum(1 for p in tmp[0].rglob("*.html")) >= min_files:
            return proc
        assert proc.poll() is None, "the child finished or failed before it could be killed"
        time.sleep(0.01)
    proc.kill()
    raise AssertionError(f"the child wrote no files within {patience(60):.0f} s")


@pytest.mark.slow
def test_sigkill_mid_write_leaves_previous_site_whole(site: Path):
    proc = start_child_and_wait_for_files(site)
    proc.send_signal(signal.SIGKILL)
    assert proc.wait() == -signal.SIGKILL
    assert tree(site) == OLD
    assert len(temps(site.parent)) == 1  # left behind by the kill ...
    write_site(NEW, site)
    assert tree(site) == NEW and temps(site.parent) == []  # ... and removed by the next build


@pytest.mark.slow
def test_sigterm_mid_write_cleans_up(site: Path):
    proc = start_child_and_wait_for_files(site)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=patience(30)) != 0
    assert tree(site) == OLD
    assert temps(site.parent) == []
