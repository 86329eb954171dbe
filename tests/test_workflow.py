"""The GitHub Pages workflow is valid and deploys site/ with GitHub's official actions."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

WORKFLOW = Path(__file__).resolve().parent.parent / ".github" / "workflows" / "pages.yml"


def test_workflow_matches_githubs_schema():
    exe = shutil.which("check-jsonschema") or str(Path(sys.executable).parent / "check-jsonschema")
    result = subprocess.run(
        [exe, "--builtin-schema", "vendor.github-workflows", str(WORKFLOW)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr


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


def test_workflow_installs_the_cpu_build_of_torch_before_the_package():
    """A hosted runner has no GPU: torch comes from PyTorch's CPU-only wheel index, into the
    venv that ``make site`` then uses, before anything else can pull torch from PyPI."""
    text = WORKFLOW.read_text(encoding="utf-8")
    cpu = text.index("--index-url https://download.pytorch.org/whl/cpu")
    line = text[text.rindex("\n", 0, cpu) : text.index("\n", cpu)]
    assert ".venv/bin/python -m pip install" in line and " torch " in line, line
    assert "-c constraints.txt" in line, "the CPU build must be the pinned version"
    assert text.index("python -m venv .venv") < cpu < text.index("make site")
    makefile = (WORKFLOW.parents[2] / "Makefile").read_text(encoding="utf-8")
    assert "VENV ?= .venv" in makefile, "make site must use the venv the workflow prepared"
