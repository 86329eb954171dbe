"""A user's install, for real: the wheel ``python -m build`` makes of a clean copy of the
sources, installed into a fresh venv (no ``--system-site-packages``) by the README's own
lines, then ``attnreport init`` and every ``run:`` step of the workflow it wrote, in order
and unedited, as GitHub's runner would run them, give a site. And a render-only venv (the
``render`` extra: no torch) draws committed results through the render workflow.

Packages come from pip's configured indexes and its cache (the network, or a local
mirror); torch comes from the CPU index, or where that cannot be reached (here) from the
local wheel pip is configured to find, pinned by ``constraints.txt`` through
``PIP_CONSTRAINT``, and the test fails if any CUDA package got in. The README's
``'attnreport[analysis]'`` (the release on PyPI) is replaced by the wheel's ``file://``
URL, and ``init --source`` points the workflow at the same wheel. Each step's seconds go
to stdout (``pytest -s``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from attnreport.cli import main
from attnreport.output import write_site
from attnreport.project import WORKFLOW_PATH
from attnreport.results import dump
from tests.fixtures.fake_results import fake_study, typed
from tests.patience import patience
from tests.test_wheel import copy_sources
from tests.tiers import extended

ROOT = Path(__file__).resolve().parent.parent

# The workflow steps not run here, and why: each ``uses:`` action the workflows name.
# A step not listed here and not a ``run:`` fails the test, so a new step gets a decision.
SKIPPED = {
    "actions/checkout": "the project folder is the checkout",
    "actions/setup-python": "the fresh venv's Python is first on PATH",
    "actions/cache": "pip's and attnreport's caches under HOME play its part",
    "actions/configure-pages": "GitHub Pages only; the built site/ is checked instead",
    "actions/upload-pages-artifact": "GitHub Pages only; the built site/ is checked instead",
    "actions/deploy-pages": "GitHub Pages only; the built site/ is checked instead",
}


def _env(venv: Path | None = None, **extra: str) -> dict[str, str]:
    """This process's environment less its venv, with ``venv`` first on PATH, torch pinned
    by constraints.txt, pip quiet about its own version, and no retry of a page it cannot
    fetch: where the CPU index cannot be reached (a mirror serves the packages), pip's five
    retries with back-off waited 7.5 s on every package's page there, 80 s of the README's
    torch line."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    ours = str(Path(sys.executable).parent)
    path = [p for p in env["PATH"].split(os.pathsep) if p != ours]
    if venv is not None:
        path.insert(0, str(venv / "bin"))
        env["VIRTUAL_ENV"] = str(venv)
    env["PATH"] = os.pathsep.join(path)
    env["PIP_CONSTRAINT"] = str(ROOT / "constraints.txt")
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env["PIP_RETRIES"] = "0"
    env["PIP_TIMEOUT"] = "5"
    return env | extra


def _sh(
    script: str, cwd: Path, env: dict[str, str], timings: dict[str, float], label: str = ""
) -> str:
    """Run ``script`` as a workflow step runs (``bash -e -o pipefail``); its output
    (stdout, then stderr). Its seconds go to ``timings`` under ``label`` (default: its
    first line)."""
    start = time.perf_counter()
    done = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", script],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=patience(1200),
    )
    timings[label or script.strip().splitlines()[0][:70]] = time.perf_counter() - start
    assert done.returncode == 0, f"{script}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout + done.stderr


def readme_block(heading: str) -> list[str]:
    """The command lines of the first ``sh`` block under README's ``heading``."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index(f"\n{heading}\n") :]
    block = section[section.index("```sh\n") + 6 : section.index("\n```", section.index("```sh"))]
    return [line for line in block.splitlines() if line.strip()]


def build_wheel(tmp: Path, timings: dict[str, float]) -> Path:
    """The wheel ``python -m build`` makes of a clean copy of the sources (offline: no
    build isolation)."""
    source = copy_sources(tmp / "attnreport-src")
    command = f"{sys.executable} -m build --wheel --no-isolation --outdir {tmp / 'dist'} {source}"
    _sh(command, tmp, os.environ.copy(), timings, "python -m build --wheel")
    return next((tmp / "dist").glob("attnreport-*.whl"))


def readme_install(tmp: Path, wheel: Path, timings: dict[str, float]) -> Path:
    """Run README's Install lines in ``tmp``, the release on PyPI swapped for ``wheel``:
    the venv."""
    lines = readme_block("## Install")
    release = "'attnreport[analysis]'"
    swapped = [line.replace(release, f"'attnreport[analysis] @ {wheel.as_uri()}'") for line in lines]  # fmt: skip
    assert sum(a != b for a, b in zip(lines, swapped, strict=True)) == 1, lines
    for line in swapped:
        _sh(line, tmp, _env(), timings, f"README: {line}"[:70])
    return tmp / ".venv"


def run_workflow(
    project: Path, venv: Path, timings: dict[str, float], outputs: dict[str, str] | None = None
) -> list[str]:
    """The workflow's ``run:`` steps in order (its ``env:`` set, ``venv`` on PATH); the
    ``uses:`` steps are skipped for the reasons in SKIPPED. Returns the actions skipped;
    ``outputs`` gets each step's output by its ``run:`` text."""
    workflow = yaml.safe_load((project / WORKFLOW_PATH).read_text(encoding="utf-8"))
    skipped = []
    for job in workflow["jobs"].values():
        env = _env(venv, **workflow.get("env", {}), **job.get("env", {}))
        for step in job["steps"]:
            if "uses" in step:
                action = step["uses"].split("@")[0]
                assert action in SKIPPED, f"{action}: run it here or say in SKIPPED why not"
                skipped.append(action)
                continue
            label = f"workflow: {step.get('name', step['run'])}"[:70]
            output = _sh(step["run"], project, env | step.get("env", {}), timings, label)
            if outputs is not None:
                outputs[step["run"].strip()] = output
    return skipped


def _report(name: str, timings: dict[str, float]) -> None:
    print(f"\n{name}: {sum(timings.values()):.0f} s")
    for step, seconds in timings.items():
        print(f"  {seconds:6.1f} s  {step}")


def _python(venv: Path, code: str) -> str:
    return subprocess.run(
        [str(venv / "bin" / "python"), "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()


@pytest.mark.slow
@pytest.mark.default_model
@extended(
    "tests/test_wheel.py::test_wheel_ships_templates_assets_and_runtime_and_renders_installed",
    "tests/test_project.py::test_init_then_the_workflows_commands_give_a_site",
)
def test_the_wheel_in_a_fresh_venv_inits_and_the_workflows_commands_give_a_site(tmp_path):
    timings: dict[str, float] = {}
    wheel = build_wheel(tmp_path, timings)
    venv = readme_install(tmp_path, wheel, timings)
    assert _python(venv, "import torch; print(torch.version.cuda)") == "None"
    installed = _python(
        venv, "import importlib.metadata as m; print([d.name for d in m.distributions()])"
    )
    assert "nvidia" not in installed.lower(), installed

    project = tmp_path / "my-report"
    env = _env(venv)
    _sh(f"attnreport init --dir {project} --source {wheel.as_uri()}", tmp_path, env, timings)
    # The author's edit: one short sentence, so the build stays short.
    (project / "sentences.txt").write_text("The cat sat on the mat.\n", encoding="utf-8")
    outputs: dict[str, str] = {}
    skipped = run_workflow(project, venv, timings, outputs)
    assert set(skipped) == set(SKIPPED)
    # The runner's log (not a terminal) shows the build's progress, and no other tool's bars.
    log = outputs["attnreport build --out site"]
    assert "Loading model" in log and "Capturing sentences: 1 of 1 (100%)" in log, log[-2000:]
    assert "de-quantizing" not in log and "it/s]" not in log, log[-2000:]

    site = project / "site"
    index = (site / "index.html").read_text(encoding="utf-8")
    assert "The cat sat on the mat." in index and "SmolLM2" in index
    assert (site / "results" / "manifest.json").is_file()
    assert len(list(site.glob("*.html"))) >= 3  # the index, 404 and the sentence's page
    _report("install + init + workflow (build)", timings)


@pytest.mark.slow
@extended(
    "tests/test_extras.py::test_render_works_without_the_analysis_extra",
    "tests/test_project.py::test_init_writes_the_render_workflow_or_none",
)
def test_a_render_only_venv_has_no_torch_and_draws_committed_results(tmp_path):
    """The author runs ``init --workflow render`` and commits ``results/``; the runner, a
    fresh venv, installs what the workflow says (the ``render`` extra) and renders."""
    timings: dict[str, float] = {}
    source = copy_sources(tmp_path / "attnreport-src")
    project = tmp_path / "my-report"
    args = ["init", "--dir", str(project), "--workflow", "render", "--source", source.as_uri()]
    assert CliRunner().invoke(main, args).exit_code == 0
    write_site(dump(typed(fake_study(2, n_layers=2, n_heads=2))), project / "results")

    venv = tmp_path / ".venv"
    _sh(f"python3 -m venv {venv}", tmp_path, _env(), timings)  # what setup-python gives
    assert set(run_workflow(project, venv, timings)) == set(SKIPPED)
    assert _python(venv, "import importlib.util as u; print(u.find_spec('torch'))") == "None"
    index = (project / "site" / "index.html").read_text(encoding="utf-8")
    assert "What does attention focus on?" in index
    assert (project / "site" / "results" / "manifest.json").is_file()
    # the Python API there: load the committed results, render them (no torch to import)
    api = f"import attnreport; s = attnreport.load({str(project / 'results')!r}); print(attnreport.render(s, {str(tmp_path / 'api-site')!r}, images=False).pages)"  # fmt: skip
    assert _python(venv, api) == "3"  # the index and the two sentences. pages
    env = _env(venv)
    done = subprocess.run(
        ["attnreport", "build", "--out", "x"], cwd=project, env=env, capture_output=True, text=True
    )
    assert done.returncode == 1 and "needs the analysis extra" in done.stderr, done.stderr
    assert not (project / "x").exists()
    _report("render-only venv: init + workflow (render)", timings)
