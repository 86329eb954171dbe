"""The byline tells the truth: its authors are the project's people (never the tool's name)
and its date is on or after the analysis it reports."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from attnreport.cli import main
from attnreport.config import Settings, load_settings, make_settings
from attnreport.dates import report_date
from attnreport.errors import AttnReportError
from attnreport.output import write_site
from attnreport.results import dump
from attnreport.site import SiteOptions, assemble_site
from attnreport.site.apparatus import citation
from tests.fixtures.fake_results import fake_study, typed

ROOT = Path(__file__).resolve().parent.parent
BYLINE = re.compile(r'<p class="byline">(.*?)</p>')
AUTHORS = re.compile(r'<span class="authors">([^<]*)</span>')
TIME = re.compile(r'<time datetime="([0-9-]+)">')


def git_env(monkeypatch, tmp_path: Path, name: str | None) -> None:
    """git sees only a global config of ours, naming ``name`` (or no one)."""
    config = tmp_path / "gitconfig"
    config.write_text("" if name is None else f"[user]\n\tname = {name}\n", encoding="utf-8")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("HOME", str(tmp_path))


def init(folder: Path, *args: str, **kwargs):
    result = CliRunner().invoke(
        main, ["init", "--dir", str(folder), "--no-workflow", *args], **kwargs
    )
    assert result.exit_code == 0, result.output
    return load_settings(folder / "attnreport.toml").authors, result.output


def test_init_names_the_authors_given(tmp_path, monkeypatch):
    git_env(monkeypatch, tmp_path, "Someone Else")
    authors, _ = init(tmp_path / "p", "--author", "Ann Author", "--author", 'Émile "Z" Zola')
    assert authors == ("Ann Author", 'Émile "Z" Zola')


def test_init_takes_gits_user_name_else_leaves_the_authors_empty(tmp_path, monkeypatch):
    git_env(monkeypatch, tmp_path, "Grace Hopper")
    assert init(tmp_path / "a")[0] == ("Grace Hopper",)
    git_env(monkeypatch, tmp_path, None)
    authors, output = init(tmp_path / "b")
    assert authors == () and "no author set" in output


def test_init_asks_at_a_terminal_offering_gits_name(tmp_path, monkeypatch):
    import attnreport.cli

    monkeypatch.setattr(attnreport.cli, "_at_terminal", lambda: True)
    git_env(monkeypatch, tmp_path, "Grace Hopper")
    assert init(tmp_path / "a", input="Ada Lovelace\n")[0] == ("Ada Lovelace",)
    assert init(tmp_path / "b", input="\n")[0] == ("Grace Hopper",)  # the offered default


def test_without_authors_no_page_and_no_citation_names_the_tool(tmp_path):
    assert Settings().authors == ()
    results = typed(fake_study(1, n_layers=1, n_heads=2))
    bib = citation("T", (), "2026-01-02", results.manifest, "0.1.0")
    assert "author" not in bib
    assert "author = {Ada and Alan}" in citation("T", ("Ada", "Alan"), None, results.manifest, "0")
    site = write_site(assemble_site(results, SiteOptions(title="T", images=False)), tmp_path / "s")
    for page in site.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        assert "authors" not in "".join(BYLINE.findall(text)), page.name


def test_the_examples_byline_names_people_and_follows_its_analysis():
    """Every page of the committed example: an author who is not the tool, and a date on
    or after the latest analysis its results record."""
    assert "attnreport" not in load_settings(ROOT / "attnreport.toml").authors
    analysed = max(
        json.loads(p.read_text(encoding="utf-8"))["analysed"]
        for p in (ROOT / "site").glob("**/results/manifest.json")
    )
    pages = list((ROOT / "site").rglob("*.html"))
    bylines = [BYLINE.search(p.read_text(encoding="utf-8")) for p in pages]
    bylines = [b.group(1) for b in bylines if b]
    assert len(bylines) >= 9  # the comparison, two model indexes, three pages each, 404
    for byline in bylines:
        assert AUTHORS.findall(byline) not in ([], ["attnreport"]), byline
        (day,) = TIME.findall(byline)
        assert day >= analysed, byline


def test_a_date_before_the_analysis_is_refused():
    assert report_date("2026-11-24", "2026-11-24") == "2026-11-24"
    assert report_date("2027-01-01", "2026-11-24") == "2027-01-01"
    assert report_date(None, "2026-11-24") == "2026-11-24"
    with pytest.raises(AttnReportError, match="2026-11-21 is before its analysis .2026-11-24."):
        report_date("2026-11-21", "2026-11-24")


@pytest.mark.parametrize("bad", ["21/11/2026", "2026-13-01", "2026-2-1", "soon"])
def test_the_date_setting_must_be_a_day(bad):
    with pytest.raises(AttnReportError, match="YYYY-MM-DD"):
        make_settings({"date": bad}, "attnreport.toml")


def test_a_render_dated_before_its_analysis_fails_in_one_line_and_writes_nothing(tmp_path):
    results = typed(fake_study(1, n_layers=1, n_heads=2))
    dated = replace(results, manifest=replace(results.manifest, analysed="2026-11-24"))
    folder = write_site(dump(dated), tmp_path / "results")
    (tmp_path / "r.toml").write_text('date = "2026-11-21"\nimages = false\n', encoding="utf-8")
    args = [
        "render",
        str(folder),
        "--out",
        str(tmp_path / "site"),
        "--config",
        str(tmp_path / "r.toml"),
    ]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1 and "before its analysis (2026-11-24)" in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert not (tmp_path / "site").exists()


def test_build_refuses_a_past_date_before_loading_a_model(tmp_path, monkeypatch):
    """The analysis runs today: a date before today is refused before the model loads
    (the model named here does not exist, so loading it would fail otherwise)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")  # the analysis day: 2023-11-14
    (tmp_path / "s.txt").write_text("one sentence\n", encoding="utf-8")
    args = ["build", "--model", "./nowhere", "--sentences", "s.txt", "--out", "site"]
    (tmp_path / "attnreport.toml").write_text('date = "2023-11-13"\n', encoding="utf-8")
    result = CliRunner().invoke(main, [*args, "--config", "attnreport.toml"])
    assert result.exit_code == 1 and "before its analysis (2023-11-14)" in result.output
