"""The report's date defaults to the analysis date, reproducibly: ``analyze`` records the
day in the manifest (``SOURCE_DATE_EPOCH``'s when set), every render of those results shows
that day whatever the clock or the environment says then, and the ``date`` setting wins."""

from __future__ import annotations

import json
import re
from datetime import date
from pathlib import Path

import pytest
from click.testing import CliRunner

from attnreport.cli import main
from attnreport.dates import analysis_date, report_date
from attnreport.output import write_site
from attnreport.results import dump, load
from attnreport.results.manifest import manifest_from_json, manifest_to_json
from tests.fixtures.fake_results import fake_study, typed

DAY = 1_700_000_000  # 2023-11-14T22:13:20Z
TIME = re.compile(r'<time datetime="([0-9-]+)">')


def test_analysis_date_is_the_pinned_day_else_the_clocks():
    assert analysis_date({"SOURCE_DATE_EPOCH": str(DAY)}) == "2023-11-14"
    assert analysis_date({}, today=date(2026, 3, 9)) == "2026-03-09"
    assert re.fullmatch(r"\d{4}-\d\d-\d\d", analysis_date({}))


def test_the_setting_wins_then_the_results_then_source_date_epoch():
    env = {"SOURCE_DATE_EPOCH": str(DAY)}
    assert report_date("2026-01-02", "2025-05-05", env) == "2026-01-02"
    assert report_date(None, "2025-05-05", env) == "2025-05-05"
    assert report_date(None, None, env) == "2023-11-14"
    assert report_date(None, None, {}) is None


def test_the_manifest_keeps_its_date_and_older_ones_load_without():
    manifest = typed(fake_study(1, n_layers=1, n_heads=1)).manifest
    assert manifest.analysed is None and "analysed" not in manifest_to_json(manifest)
    dated = manifest_from_json({**manifest_to_json(manifest), "analysed": "2024-02-29"})
    assert dated.analysed == "2024-02-29"
    assert manifest_to_json(dated)["analysed"] == "2024-02-29"


def _dates(site: Path) -> set[str]:
    pages = [p.read_text(encoding="utf-8") for p in site.rglob("*.html")]
    return {found for page in pages for found in TIME.findall(page)}


@pytest.mark.slow
def test_a_rerender_of_the_same_results_shows_the_analysis_date(
    tmp_path, monkeypatch, tiny_model_dirs
):
    monkeypatch.chdir(tmp_path)
    Path("one.txt").write_text("the cat sat on the mat\n")
    model = ("--model", str(tiny_model_dirs["llama"]), "--sentences", "one.txt")
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(DAY))
    done = CliRunner().invoke(main, ["analyze", *model, "--out", "results"])
    assert done.exit_code == 0, done.output
    manifest = json.loads(Path("results/manifest.json").read_text(encoding="utf-8"))
    assert manifest["analysed"] == "2023-11-14"
    assert load("results").manifest.analysed == "2023-11-14"

    # later, on another day, with another pinned day or none: the same date on every page
    for env in (str(DAY + 400 * 86400), None):
        if env is None:
            monkeypatch.delenv("SOURCE_DATE_EPOCH")
        else:
            monkeypatch.setenv("SOURCE_DATE_EPOCH", env)
        out = tmp_path / f"site-{env}"
        done = CliRunner().invoke(main, ["render", "results", "--out", str(out), "--no-images"])
        assert done.exit_code == 0, done.output
        assert _dates(out) == {"2023-11-14"}
    first, second = sorted(tmp_path.glob("site-*"))
    assert (first / "index.html").read_bytes() == (second / "index.html").read_bytes()

    Path("attnreport.toml").write_text('date = "2026-05-04"\n')
    done = CliRunner().invoke(main, ["render", "results", "--out", "dated", "--no-images"])
    assert done.exit_code == 0, done.output
    assert _dates(tmp_path / "dated") == {"2026-05-04"}


def test_results_without_a_date_fall_back_to_source_date_epoch(tmp_path, monkeypatch):
    results = write_site(dump(typed(fake_study(1, n_layers=1, n_heads=1))), tmp_path / "r")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(DAY))
    done = CliRunner().invoke(main, ["render", str(results), "--out", "s", "--no-images"])
    assert done.exit_code == 0, done.output
    assert _dates(tmp_path / "s") == {"2023-11-14"}
    monkeypatch.delenv("SOURCE_DATE_EPOCH")
    done = CliRunner().invoke(main, ["render", str(results), "--out", "t", "--no-images"])
    assert _dates(tmp_path / "t") == set()
