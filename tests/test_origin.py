"""The workflow ``init`` writes installs the attnreport its author ran, from a source a
runner reaches, checked when ``init`` runs: the release on PyPI, the git commit or URL pip
recorded (PEP 610), the ``origin`` remote and commit of the clone an editable install
runs from, or ``--source``; with none, no workflow and one line saying how to get one."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from attnreport.cli import main
from attnreport.errors import AttnReportError
from attnreport.origin import (
    Origin,
    check_source,
    clone_origin,
    installed_origin,
    origin_of,
    requirement,
    runner_url,
)
from attnreport.project import WORKFLOW_PATH
from tests.patience import patience
from tests.test_wheel import copy_sources, fresh_venv

SHA = "0123456789abcdef0123456789abcdef01234567"
REMOTE = "https://github.com/someone/attnreport.git"


def _direct_url(**info) -> str:
    return json.dumps(info)


def _on_pypi(answer: bool | None):
    return lambda _version: answer


def test_the_source_is_the_commit_url_or_released_version_pip_recorded(tmp_path):
    git = {"vcs": "git", "commit_id": SHA, "requested_revision": "main"}
    url = "https://github.com/someone/attnreport"
    assert origin_of(_direct_url(url=url, vcs_info=git), "0.1.0").source == f"git+{url}@{SHA}"
    wheel = "https://example.org/attnreport-0.3.0-py3-none-any.whl"
    assert origin_of(_direct_url(url=wheel, archive_info={}), "0.3.0").source == wheel
    # from an index: the same version by name, once PyPI says it has it
    assert origin_of(None, "0.2.1", _on_pypi(True)) == Origin("0.2.1", "attnreport 0.2.1 from PyPI")
    missing = origin_of(None, "0.2.1", _on_pypi(False))
    assert missing.source is None and "PyPI has no attnreport 0.2.1" in missing.said
    offline = origin_of(None, "0.2.1", _on_pypi(None))
    assert offline.source is None and "PyPI cannot be reached" in offline.said
    wheel_file = tmp_path / "attnreport-0.1.0-py3-none-any.whl"
    wheel_file.write_bytes(b"")
    local = origin_of(_direct_url(url=wheel_file.as_uri(), archive_info={}), "0.1")
    assert local.source is None and "a file on this machine" in local.said


@pytest.mark.parametrize(
    ("remote", "url"),
    [
        (REMOTE, REMOTE),
        ("git@github.com:someone/attnreport.git", REMOTE),
        ("ssh://git@github.com/someone/attnreport.git", REMOTE),
        ("https://me:TOKEN@github.com/someone/attnreport.git", REMOTE),  # never the token
        ("/home/me/attnreport", None),
        ("../attnreport", None),
        ("file:///home/me/attnreport", None),
    ],
)
def test_a_remote_is_read_as_the_https_address_a_runner_clones(remote, url):
    assert runner_url(remote) == url


def _git(folder: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def clone(path: Path, remote: str | None = REMOTE, pushed: bool = True) -> str:
    """A git clone of attnreport's sources at ``path`` with ``origin`` = ``remote``, its
    commit on a remote-tracking branch when ``pushed`` (as a fetch leaves it): its commit."""
    copy_sources(path)
    _git(path, "init", "-q", "-b", "main")
    _git(path, "add", ".")
    _git(path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "sources")
    if remote is not None:
        _git(path, "remote", "add", "origin", remote)
    if pushed:
        _git(path, "update-ref", "refs/remotes/origin/main", "HEAD")
    return _git(path, "rev-parse", "HEAD")


def test_a_clone_gives_its_origin_remote_at_its_commit_once_pushed(tmp_path):
    commit = clone(tmp_path / "a")
    assert clone_origin(tmp_path / "a" / "attnreport").source == f"git+{REMOTE}@{commit}"
    (tmp_path / "a" / "README.md").write_text("edited")
    assert "uncommitted changes are not in that commit" in clone_origin(tmp_path / "a").said
    clone(tmp_path / "b", pushed=False)
    unpushed = clone_origin(tmp_path / "b")
    assert unpushed.source is None and "is not on its origin remote" in unpushed.said
    clone(tmp_path / "c", remote=None, pushed=False)
    alone = clone_origin(tmp_path / "c")
    assert alone.source is None and "which has no origin remote" in alone.said
    clone(tmp_path / "d", remote=str(tmp_path / "a"))
    assert "a folder a runner cannot reach" in clone_origin(tmp_path / "d").said
    (tmp_path / "e").mkdir()
    assert "it is not a git clone" in clone_origin(tmp_path / "e").said


def _workflow_env(folder: Path) -> str:
    text = (folder / WORKFLOW_PATH).read_text(encoding="utf-8")
    return yaml.safe_load(text)["env"]["ATTNREPORT"]


def _init_with(python: Path, project: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(python), "-m", "attnreport.cli", "init", "--dir", str(project)],
        capture_output=True,
        text=True,
        cwd=project.parent,
        timeout=patience(300),
    )


@pytest.mark.slow
def test_init_from_an_editable_install_of_a_clone(tmp_path):
    """``pip install -e CLONE`` into a fresh venv, then ``init`` with that venv: the workflow
    installs the clone's origin at its commit; without an origin remote, init says so in
    one line and writes no workflow (the rest of the project is written)."""
    commit = clone(tmp_path / "clone")
    python = fresh_venv(tmp_path / "venv")
    pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "-q"]
    done = subprocess.run(
        [*pip, "--no-deps", "--no-build-isolation", "-e", str(tmp_path / "clone")],
        capture_output=True,
        text=True,
        timeout=patience(600),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    where = subprocess.run(
        [str(python), "-c", "import attnreport; print(attnreport.__file__)"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert where.stdout.startswith(str(tmp_path / "clone")), where.stdout + where.stderr

    done = _init_with(python, tmp_path / "report")
    assert done.returncode == 0, done.stderr
    assert _workflow_env(tmp_path / "report") == f"attnreport[analysis] @ git+{REMOTE}@{commit}"
    assert f"the workflow installs attnreport from commit {commit[:12]} of {REMOTE}" in done.stdout

    _git(tmp_path / "clone", "remote", "remove", "origin")
    done = _init_with(python, tmp_path / "alone")
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "alone" / WORKFLOW_PATH).exists()
    assert {p.name for p in (tmp_path / "alone").iterdir()} == {"attnreport.toml", "sentences.txt", ".gitignore"}  # fmt: skip
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("warning: no workflow written: ")
    assert "which has no origin remote" in lines[0] and "--source VERSION_OR_URL" in lines[0]


def test_the_release_on_pypi_is_written_once_pypi_has_it(tmp_path, monkeypatch):
    """An attnreport installed from an index: the workflow pins the same release, only when
    PyPI has it."""
    for answer, written in ((True, True), (False, False), (None, False)):
        monkeypatch.setattr(
            "attnreport.origin.installed_origin",
            lambda answer=answer: origin_of(None, "0.4.0", _on_pypi(answer)),
        )
        folder = tmp_path / str(answer)
        result = CliRunner().invoke(main, ["init", "--dir", str(folder)])
        assert result.exit_code == 0, result.output
        assert (folder / WORKFLOW_PATH).exists() == written, result.output
        if written:
            assert _workflow_env(folder) == "attnreport[analysis]==0.4.0"
        else:
            assert "no workflow written: this attnreport 0.4.0 came from a package index" in result.output  # fmt: skip


def test_installed_origin_reads_the_installs_own_record(tmp_path):
    site = tmp_path / "lib" / "site-packages"
    (site / "attnreport").mkdir(parents=True)
    info = site / "attnreport-0.4.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: attnreport\nVersion: 0.4.0\n")
    url = "https://github.com/someone/attnreport"
    (info / "direct_url.json").write_text(_direct_url(url=url, vcs_info={"vcs": "git", "commit_id": SHA}))  # fmt: skip
    assert installed_origin(site / "attnreport").source == f"git+{url}@{SHA}"
    (info / "direct_url.json").unlink()
    assert installed_origin(site / "attnreport", _on_pypi(True)).source == "0.4.0"


def test_requirement_pins_a_version_or_points_at_a_url():
    assert requirement("analysis", "0.4.0") == "attnreport[analysis]==0.4.0"
    url = f"git+https://github.com/someone/attnreport@{SHA}"
    assert requirement("render", url) == f"attnreport[render] @ {url}"
    assert requirement("render", None) == ""


@pytest.mark.parametrize("bad", ["", "a b", 'x"y', "x\\y", "$(rm -rf ~)", "a\nb"])
def test_a_source_that_cannot_stand_in_the_workflow_is_refused(bad, tmp_path):
    with pytest.raises(AttnReportError, match="--source"):
        check_source(bad)
    result = CliRunner().invoke(main, ["init", "--dir", str(tmp_path), "--source", bad])
    assert result.exit_code == 1 and result.output.count("\n") == 1, result.output
    assert list(tmp_path.iterdir()) == []


def test_init_writes_the_given_source_into_both_workflows(tmp_path):
    url = "git+https://github.com/someone/attnreport@v0.4.0"
    for form, extra in (("build", "analysis"), ("render", "render")):
        args = ["init", "--dir", str(tmp_path / form), "--workflow", form, "--source", url]
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 0, result.output
        assert _workflow_env(tmp_path / form) == f"attnreport[{extra}] @ {url}"
    result = CliRunner().invoke(main, ["init", "--dir", str(tmp_path / "v"), "--source", "0.4.0"])
    assert _workflow_env(tmp_path / "v") == "attnreport[analysis]==0.4.0"


def test_the_line_that_says_how_gets_a_workflow_into_the_same_project(tmp_path, monkeypatch):
    """No source: the project without a workflow; then ``init --source`` as the line says
    writes only the workflow, keeping the author's files."""
    monkeypatch.setattr("attnreport.origin.installed_origin", lambda: Origin(None, "nowhere"))
    first = CliRunner().invoke(main, ["init", "--dir", str(tmp_path)])
    assert first.exit_code == 0 and not (tmp_path / WORKFLOW_PATH).exists()
    (tmp_path / "sentences.txt").write_text("mine\n")
    second = CliRunner().invoke(main, ["init", "--dir", str(tmp_path), "--source", "0.4.0"])
    assert second.exit_code == 0, second.output
    assert _workflow_env(tmp_path) == "attnreport[analysis]==0.4.0"
    assert (tmp_path / "sentences.txt").read_text() == "mine\n"
    assert "kept" in second.output and "(already there)" in second.output
    again = CliRunner().invoke(main, ["init", "--dir", str(tmp_path), "--source", "0.4.0"])
    assert again.exit_code == 1 and "already holds every file init writes" in again.output
