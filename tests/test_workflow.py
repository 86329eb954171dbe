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
