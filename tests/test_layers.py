"""Imports run down the stages: the import-linter contracts of ``pyproject.toml`` hold,
and they fail on an upward import planted in a copy of the package."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.patience import patience

ROOT = Path(__file__).resolve().parent.parent


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` with the contracts of ``root/pyproject.toml``, on ``root/attnreport``."""
    command = Path(sys.executable).with_name("lint-imports")
    env = dict(os.environ, PYTHONPATH=str(root))
    return subprocess.run(
        [str(command), "--config", str(root / "pyproject.toml"), "--no-cache"],
        cwd=root, env=env, capture_output=True, text=True, timeout=patience(300),
    )  # fmt: skip


def test_the_package_keeps_its_import_contracts():
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "0 broken" in result.stdout


def test_an_upward_import_breaks_a_contract(tmp_path):
    shutil.copytree(ROOT / "attnreport", tmp_path / "attnreport")
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    store = tmp_path / "attnreport" / "corpus" / "store.py"
    store.write_text(store.read_text() + "\nfrom attnreport.site.words import wording  # noqa\n")
    vocabulary = tmp_path / "attnreport" / "vocabulary.py"
    vocabulary.write_text(vocabulary.read_text() + "\nfrom attnreport import errors  # noqa\n")
    result = lint_imports(tmp_path)
    assert result.returncode != 0
    assert "The stages import downward only BROKEN" in result.stdout
    assert "attnreport.corpus.store -> attnreport.site.words.wording" in result.stdout
    assert "attnreport.vocabulary -> attnreport.errors" in result.stdout
