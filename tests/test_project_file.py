"""One project file for every command: verify, build, analyze, render and compare read
./attnreport.toml (or --config FILE) with the same precedence, defaults < file < flags.

CliRunner in a temporary project folder (the test's working directory)."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from attnreport.cli import main, settings_from
from attnreport.output import write_site
from attnreport.results import dump
from tests.fixtures.fake_results import fake_study, typed


def parsed(command: str, *args: str) -> click.Context:
    return main.commands[command].make_context(command, list(args))


def cli(*args: str):
    return CliRunner().invoke(main, list(args))


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A project folder as ``init`` leaves it, edited: four sentences, a title, an author,
    and a date after the analysis day (pinned to 2026-01-01)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")
    Path("sentences.txt").write_text("the cat sat\nthe dog ran\na mouse hid\nthe mat lay\n")
    Path("other.txt").write_text("one sentence only\n")
    Path("attnreport.toml").write_text(
        'sentences = "sentences.txt"\ntitle = "Our own report"\nauthors = ["Ann Author"]\n'
        'date = "2026-05-04"\nrtol = 0.25\n'
    )
    Path("other.toml").write_text('sentences = "other.txt"\ntitle = "The other one"\n')
    return tmp_path


@pytest.mark.parametrize(
    ("command", "args"),
    [("verify", ()), ("build", ()), ("analyze", ("--out", "o")), ("compare", ("a", "b"))],
)
def test_every_command_reads_the_project_file_and_config_wins(project, command, args):
    settings = settings_from(parsed(command, *args))
    assert Path(settings.sentences).resolve() == (project / "sentences.txt").resolve()
    assert settings.title == "Our own report" and settings.rtol == 0.25
    other = settings_from(parsed(command, *args, "--config", "other.toml"))
    assert Path(other.sentences).resolve() == (project / "other.txt").resolve()
    assert other.rtol == 1e-3


def test_flags_beat_the_project_file(project):
    verify = settings_from(parsed("verify", "--sentences", "other.txt"))
    assert verify.sentences == "other.txt"
    compare = settings_from(parsed("compare", "a", "b", "--rtol", "0.5"))
    assert compare.rtol == 0.5 and compare.atol == 1e-4


def test_verify_checks_the_projects_sentences(project, tiny_model_dirs):
    model = ("--model", str(tiny_model_dirs["llama"]))
    result = cli("verify", *model)
    assert result.exit_code == 0, result.output
    assert "all 3 checks passed on 4 sentence(s)" in result.output
    result = cli("verify", *model, "--config", "other.toml")
    assert "all 3 checks passed on 1 sentence(s)" in result.output, result.output


def _results(folder: Path, seed: int = 0) -> Path:
    study = typed(fake_study(2, n_layers=2, n_heads=2, seed=seed))
    return write_site(dump(study), folder)


def test_render_of_analyze_output_takes_title_authors_and_date_from_the_project(project):
    results = _results(project / "results")
    result = cli("render", str(results), "--out", "site", "--no-images")
    assert result.exit_code == 0, result.output
    index = (project / "site" / "index.html").read_text(encoding="utf-8")
    assert "Our own report" in index and "Ann Author" in index and "2026-05-04" in index
    result = cli("render", str(results), "--out", "o2", "--no-images", "--config", "other.toml")
    index = (project / "o2" / "index.html").read_text(encoding="utf-8")
    assert "The other one" in index and "Ann Author" not in index
    # a site's own results render as they were built (byte for byte), whatever the file says
    Path("attnreport.toml").write_text('title = "Changed since"\n')
    result = cli("render", "o2/results", "--out", "o3")
    assert result.exit_code == 0, result.output
    again = (project / "o3" / "index.html").read_text(encoding="utf-8")
    assert again == index


def test_compare_takes_its_tolerances_from_the_project(project):
    first, second = _results(project / "r0"), _results(project / "r1")
    result = cli("compare", str(first), str(second))
    assert result.exit_code == 0, result.output
    assert "agree within rtol 0.25, atol 0.0001" in result.output
