"""``attnreport init`` writes a publishable project, and that project builds as its own
workflow would build it: ``init``, then the workflow's commands run locally in order."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from attnreport.cli import main
from attnreport.config import load_settings
from attnreport.project import WORKFLOW_PATH, workflow_text
from tests.patience import patience
from tests.tiny_models import save_tiny_model

PROJECT = {"attnreport.toml", "sentences.txt", ".gitignore", WORKFLOW_PATH}
SOURCE = "0.1.0"  # a release (this checkout has no source a runner reaches: tests/test_origin.py)


def _files(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


def _init(tmp_path: Path, *args: str):
    return CliRunner().invoke(main, ["init", "--dir", str(tmp_path), "--source", SOURCE, *args])


def test_init_writes_a_project_with_the_build_workflow(tmp_path):
    result = _init(tmp_path)
    assert result.exit_code == 0, result.output
    assert _files(tmp_path) == PROJECT
    assert (tmp_path / WORKFLOW_PATH).read_text(encoding="utf-8") == workflow_text("build", SOURCE)
    assert "site/" in (tmp_path / ".gitignore").read_text(encoding="utf-8").splitlines()
    assert load_settings(tmp_path / "attnreport.toml").out == str(tmp_path / "site")


def test_init_writes_the_render_workflow_or_none(tmp_path):
    assert _init(tmp_path / "r", "--workflow", "render").exit_code == 0
    text = (tmp_path / "r" / WORKFLOW_PATH).read_text(encoding="utf-8")
    assert text == workflow_text("render", SOURCE)
    assert not any("torch" in run for run in _workflow_runs(text))
    assert _init(tmp_path / "n", "--no-workflow").exit_code == 0
    assert _files(tmp_path / "n") == PROJECT - {WORKFLOW_PATH}


def test_init_keeps_a_workflow_that_exists(tmp_path):
    workflow = tmp_path / WORKFLOW_PATH
    workflow.parent.mkdir(parents=True)
    workflow.write_text("mine\n")
    result = _init(tmp_path)
    assert result.exit_code == 0 and f"kept {workflow} (already there)" in result.output
    assert _files(tmp_path) == PROJECT and workflow.read_text() == "mine\n"


def _workflow_runs(text: str) -> list[str]:
    """The build job's ``run:`` steps, in order."""
    return [step["run"] for step in yaml.safe_load(text)["jobs"]["build"]["steps"] if "run" in step]


@pytest.mark.slow
def test_init_then_the_workflows_commands_give_a_site(tmp_path):
    """init + build, then the workflow's own commands in order, as the runner would run them
    (here with this venv's attnreport on PATH: the install steps, which only pip-install
    from the network, are checked by test_workflow and test_install and not run). A tiny model stands in for the
    default one, and two short sentences for the starter's, to keep it fast."""
    assert _init(tmp_path, "--author", "Ann Author").exit_code == 0
    model = save_tiny_model("llama", tmp_path / "model")
    config = (tmp_path / "attnreport.toml").read_text(encoding="utf-8")
    config = config.replace('model = "default"', f'model = "{model}"')
    (tmp_path / "attnreport.toml").write_text(config.replace("images = true", "images = false"))
    (tmp_path / "sentences.txt").write_text("the cat sat on the mat\nthe dog chased a mouse\n")
    env = os.environ | {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    runs = _workflow_runs((tmp_path / WORKFLOW_PATH).read_text(encoding="utf-8"))
    (install, packages), commands = runs[:2], runs[2:]
    assert "pip install" in install and "attnreport.packages --install" in packages
    assert commands == ["attnreport build --out site"]
    for command in commands:
        done = subprocess.run(
            command,
            shell=True,
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=patience(600),
        )
        assert done.returncode == 0, done.stdout + done.stderr
    site = tmp_path / "site"
    index = (site / "index.html").read_text(encoding="utf-8")
    assert "What does attention focus on?" in index and "Ann Author" in index
    assert (site / "results" / "manifest.json").is_file()
    assert len(list(site.glob("*.html"))) >= 3  # the index, 404 and a page per sentence
