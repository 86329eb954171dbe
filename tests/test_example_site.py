"""The committed example report is exactly what `make site` builds today, and stays small."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from attnreport.cli import main

ROOT = Path(__file__).resolve().parent.parent
SITE = ROOT / "site"
LIMIT = 20_000_000  # bytes: the example must stay light enough to commit and publish


def tree(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.mark.default_model
@pytest.mark.slow
def test_committed_site_is_a_fresh_build(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    fresh = tmp_path / "site"
    result = CliRunner().invoke(main, ["build", "--config", "attnreport.toml", "--out", str(fresh)])
    assert result.exit_code == 0, result.output
    built, committed = tree(fresh), tree(SITE)
    assert sorted(built) == sorted(committed), "run `make site` and commit site/"
    stale = [name for name in built if built[name] != committed[name]]
    assert not stale, (
        f"{len(stale)} files differ, e.g. {stale[:3]}: run `make site` and commit site/"
    )


def test_committed_site_is_small_and_complete():
    files = tree(SITE)
    assert sum(len(b) for b in files.values()) < LIMIT
    for needed in ("index.html", "404.html", ".nojekyll", ".attnreport-site", "assets/vega.js"):
        assert needed in files
    pages = [name for name in files if name.endswith(".html") and "/" not in name]
    assert len(pages) >= 8  # index, 404 and at least six sentences
