"""The workflow ``init`` writes installs the attnreport its author ran: the git commit, URL
or version pip recorded when it installed it (PEP 610), or ``--source``; from a local folder
it installs nothing and its first step says what to fill in."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from attnreport.cli import main
from attnreport.errors import AttnReportError
from attnreport.origin import check_source, installed_source, requirement, source_from
from attnreport.project import WORKFLOW_PATH

ROOT = Path(__file__).resolve().parent.parent
SHA = "0123456789abcdef0123456789abcdef01234567"


def _direct_url(**info) -> str:
    return json.dumps(info)


def test_the_source_is_the_commit_url_or_version_pip_recorded():
    git = {"vcs": "git", "commit_id": SHA, "requested_revision": "main"}
    url = "https://github.com/someone/attnreport"
    assert source_from(_direct_url(url=url, vcs_info=git), "0.1.0") == f"git+{url}@{SHA}"
    wheel = "https://example.org/attnreport-0.3.0-py3-none-any.whl"
    assert source_from(_direct_url(url=wheel, archive_info={}), "0.3.0") == wheel
    assert source_from(None, "0.2.1") == "0.2.1"  # from an index: the same version by name
    for local in ("file:///home/me/attnreport", "file:///tmp/attnreport-0.1.0.whl"):
        assert source_from(_direct_url(url=local, dir_info={"editable": True}), "0.1") is None
        assert source_from(_direct_url(url=local, vcs_info=git), "0.1") is None


def _installed(tmp_path: Path, direct_url: str | None, version: str = "0.4.0") -> Path:
    """A site-packages folder holding an installed attnreport as pip leaves it."""
    site = tmp_path / "lib" / "site-packages"
    (site / "attnreport").mkdir(parents=True)
    info = site / f"attnreport-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: attnreport\nVersion: {version}\n")
    if direct_url is not None:
        (info / "direct_url.json").write_text(direct_url)
    return site / "attnreport"


def test_installed_source_reads_the_installs_own_record(tmp_path):
    url = "https://github.com/someone/attnreport"
    recorded = _direct_url(url=url, vcs_info={"vcs": "git", "commit_id": SHA})
    assert installed_source(_installed(tmp_path / "git", recorded)) == f"git+{url}@{SHA}"
    assert installed_source(_installed(tmp_path / "index", None, "0.4.0")) == "0.4.0"
    # a source checkout (editable or on sys.path) is nothing a runner can install
    assert installed_source(ROOT / "attnreport") is None


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


def _env(folder: Path) -> str:
    return yaml.safe_load((folder / WORKFLOW_PATH).read_text(encoding="utf-8"))["env"]["ATTNREPORT"]


def test_init_writes_the_given_source_into_both_workflows(tmp_path):
    url = "git+https://github.com/someone/attnreport@v0.4.0"
    for form, extra in (("build", "analysis"), ("render", "render")):
        args = ["init", "--dir", str(tmp_path / form), "--workflow", form, "--source", url]
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 0, result.output
        assert _env(tmp_path / form) == f"attnreport[{extra}] @ {url}"
    result = CliRunner().invoke(main, ["init", "--dir", str(tmp_path / "v"), "--source", "0.4.0"])
    assert _env(tmp_path / "v") == "attnreport[analysis]==0.4.0"


def test_with_no_known_source_the_workflow_stops_at_its_first_line(tmp_path, monkeypatch):
    monkeypatch.setattr("attnreport.origin.installed_source", lambda: None)
    result = CliRunner().invoke(main, ["init", "--dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "set ATTNREPORT in the workflow, or run init with --source" in result.output
    assert _env(tmp_path) == ""
    steps = yaml.safe_load((tmp_path / WORKFLOW_PATH).read_text())["jobs"]["build"]["steps"]
    guard = next(s["run"] for s in steps if "pip install" in s.get("run", "")).splitlines()[0]
    done = subprocess.run(
        ["bash", "-e", "-c", guard], env={"ATTNREPORT": ""}, capture_output=True, text=True
    )
    assert done.returncode == 1 and "::error::set ATTNREPORT" in done.stdout
    ok = subprocess.run(["bash", "-e", "-c", guard], env={"ATTNREPORT": "attnreport==1"})
    assert ok.returncode == 0
