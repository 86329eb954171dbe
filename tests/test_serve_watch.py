"""``serve --watch`` in process, on a tiny model: a save does only the work it asks for,
and what it leaves equals what a fresh run would.

- an edited sentence is analysed again alone: the other sentences' files keep their
  bytes, and the folder agrees with a fresh ``analyze`` of the new sentences (numbers
  within a tolerance: ``compare_results``), interventions included, whether they were
  read back or run again;
- a page setting (the title) re-renders without analysing;
- a recorded setting (epsilons) analyses every sentence again;
- a bad setting raises one ``AttnReportError`` and leaves the site as it was;
- the site written is the one ``attnreport render`` draws from the results (nothing of
  the watcher in it);
- with ``defer_grids`` (what the loop asks), grids that must run again are left for
  ``finish_grids``: the site goes up with a note in each grid's place, then with them
  (``test_serve_grids`` serves it).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from attnreport.charts.registry import entry_of, page_inputs, place
from attnreport.cli import main
from attnreport.errors import AttnReportError
from attnreport.output import trash_path
from attnreport.results import load
from attnreport.results.compare import Tolerance, compare_results
from attnreport.serve.project import Project
from attnreport.site.apparatus import GRIDS_UPDATING
from tests.tiny_models import save_tiny_model

pytestmark = pytest.mark.slow

SENTENCES = ["the cat sat on the mat .", "the dog chased the cat", "what does attention focus on ?", "le chat dort ."]  # fmt: skip


def _quiet(_stage: str, _done: int, _total: int) -> None:
    return None


def tree_bytes(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` by relative path, with its bytes."""
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()
    }


def write_project(folder: Path, model: Path, title: str = "Watch test", extra: str = "") -> Path:
    """A settings file and sentences file in ``folder``; the config's path."""
    (folder / "sentences.txt").write_text("\n".join(SENTENCES) + "\n", encoding="utf-8")
    config = folder / "attnreport.toml"
    config.write_text(
        f'model = "{model}"\nsentences = "sentences.txt"\nout = "site"\ntitle = "{title}"\n'
        f'date = "2026-01-01"\nimages = false\n{extra}',
        encoding="utf-8",
    )
    return config


@pytest.fixture(autouse=True)
def analysed_on_the_projects_date(monkeypatch):
    """The analysis day is pinned to 2026-01-01, the date the projects set (a report is
    never dated before its analysis)."""
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")


@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory) -> Path:
    return save_tiny_model("llama", tmp_path_factory.mktemp("watch-model") / "llama")


def _fresh_results(config: Path, out: Path) -> Path:
    result = CliRunner().invoke(main, ["analyze", "--config", str(config), "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out


def _assert_agrees(expected: Path, actual: Path) -> None:
    compared = compare_results(load(expected), load(actual), Tolerance(1e-4, 1e-6))
    assert compared.ok, compared.problems[:5]


def sentence_files(results: Path) -> dict[str, bytes]:
    """Every file under ``results/sentences`` (the sentence files and their map parts)."""
    folder = results / "sentences"
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}  # fmt: skip


def test_an_edited_sentence_is_analysed_again_alone(tmp_path, tiny_llama):
    config = write_project(tmp_path, tiny_llama)
    project = Project(config, {})
    first = project.build(_quiet)
    assert first.analysis == "all" and first.loaded and first.pages == len(SENTENCES) + 1
    results = project.results
    before = sentence_files(results)

    edited = [*SENTENCES]
    edited[3] = "le chat dort sur the mat ."
    (tmp_path / "sentences.txt").write_text("\n".join(edited) + "\n", encoding="utf-8")
    second = project.build(_quiet)
    assert (second.analysis, second.analysed, second.loaded) == ("sentences", (3,), False)
    after = sentence_files(results)
    changed = sorted(n for n in after if after[n] != before[n])
    assert (
        changed[0] == "003.json.gz"
        and changed[1:]
        and all(n.startswith("003/") for n in changed[1:])
    )
    old, new = "s003-le-chat-dort.html", "s003-le-chat-dort-sur-the-mat.html"
    assert second.moved == {old: new}
    assert (project.site / new).is_file() and not (project.site / old).exists()
    assert "le chat dort sur the mat" in (project.site / "index.html").read_text()
    _assert_agrees(_fresh_results(config, tmp_path / "fresh"), results)

    # A sentence the interventions ran on (the first three by default) changes them.
    edited[0] = "the mat sat on the cat ."
    (tmp_path / "sentences.txt").write_text("\n".join(edited[:3]) + "\n", encoding="utf-8")
    third = project.build(_quiet)
    assert third.analysis == "sentences" and third.analysed == (0, 3)
    assert not (results / "sentences" / "003.json.gz").exists()
    assert not (results / "sentences" / "003").exists()  # nor its map parts
    _assert_agrees(_fresh_results(config, tmp_path / "fresh-2"), results)


def test_page_settings_render_and_recorded_settings_analyse_again(tmp_path, tiny_llama):
    config = write_project(tmp_path, tiny_llama)
    project = Project(config, {})
    project.build(_quiet)
    write_project(tmp_path, tiny_llama, title="A new title")
    retitled = project.build(_quiet)
    assert (retitled.analysis, retitled.loaded) == ("none", False)
    assert "A new title" in (project.site / "index.html").read_text()

    (project.results / "my-notes.md").write_text("mine", encoding="utf-8")  # the user's
    write_project(tmp_path, tiny_llama, title="A new title", extra="epsilons = [0.25]\n")
    again = project.build(_quiet)
    assert again.analysis == "all" and not again.loaded
    assert load(project.results).manifest.settings.epsilons == (0.25,)
    # the fresh run emptied the results folder, all but the user's file, which is in the trash
    assert not (project.results / "my-notes.md").exists()
    assert (trash_path(project.results) / "my-notes.md").read_text(encoding="utf-8") == "mine"


def test_a_bad_edit_fails_in_one_line_and_keeps_the_site(tmp_path, tiny_llama):
    config = write_project(tmp_path, tiny_llama)
    project = Project(config, {})
    project.build(_quiet)
    site = tree_bytes(project.site)
    config.write_text(config.read_text() + "map_tokens = 0\n", encoding="utf-8")
    with pytest.raises(AttnReportError, match="map_tokens") as error:
        project.build(_quiet)
    assert "\n" not in str(error.value)
    write_project(tmp_path, tiny_llama)
    (tmp_path / "sentences.txt").write_bytes(b"\x00\x01\xff\xfe binary")
    with pytest.raises(AttnReportError, match="binary"):
        project.build(_quiet)
    assert tree_bytes(project.site) == site
    write_project(tmp_path, tiny_llama)
    assert project.build(_quiet).analysis == "none"


def test_the_written_site_is_what_render_draws(tmp_path, tiny_llama):
    """Nothing of the watcher is written: ``render SITE/results`` gives the same bytes."""
    config = write_project(tmp_path, tiny_llama)
    project = Project(config, {})
    project.build(_quiet)
    copy = tmp_path / "copy"
    result = CliRunner().invoke(main, ["render", str(project.site / "results"), "--out", str(copy)])
    assert result.exit_code == 0, result.output
    written = tree_bytes(project.site)
    assert written == tree_bytes(copy)
    assert not any(b"__attnreport" in data for data in written.values())


@pytest.mark.slow
def test_deferred_images_are_drawn_after(tmp_path, tiny_llama):
    """A save's site is written first without its static images, then with them: the
    second is the site ``render`` draws."""
    config = write_project(tmp_path, tiny_llama)
    config.write_text(config.read_text().replace("images = false", "images = true"))
    project = Project(config, {})
    project.build(_quiet, defer_images=True)
    assert not (project.site / "figures").exists()
    assert project.build(_quiet, defer_images=True).analysis == "none"
    assert (project.site / "figures").is_dir() and not project.draw_images()  # nothing new
    (tmp_path / "sentences.txt").write_text("the cat sat on the mat .\n", encoding="utf-8")
    project.build(_quiet, defer_images=True)
    assert not (project.site / "figures").exists()
    assert b"<noscript><img" not in (project.site / "index.html").read_bytes()
    assert project.draw_images() and not project.draw_images()
    copy = tmp_path / "copy"
    result = CliRunner().invoke(main, ["render", str(project.site / "results"), "--out", str(copy)])
    assert result.exit_code == 0, result.output
    written = tree_bytes(project.site)
    assert written == tree_bytes(copy) and any(name.endswith(".svg") for name in written)


def test_grids_that_must_run_again_follow_the_site(tmp_path, tiny_llama):
    # Sentence 3 is no grid's input (scaled: 0; mean: 0-2), and the layer is fixed: an
    # edit anywhere may move the default one, and every grid with it.
    extra = "intervene_layer = 1\nscaling_sentences = [0]\n"
    config = write_project(tmp_path, tiny_llama, extra=extra)
    project = Project(config, {})
    first = project.build(_quiet, defer_grids=True)
    assert first.grids_left and first.pages == len(SENTENCES) + 1
    site, results = project.site, project.results
    grids_page = (site / "s000-the-cat-sat-on-the-mat.html").read_text()
    assert grids_page.count("data-updating=") == 3  # Scaling, mean and mean before rotation
    assert 'id="ar-chart-scaling-grid"' not in grids_page
    index = (site / "index.html").read_text()
    assert GRIDS_UPDATING in index and "The interventions are being run." in index
    assert "No interventions were run" not in index
    assert not (results / "interventions.json.gz").exists()
    stored = (site / "results" / "render.json").read_bytes()

    assert project.finish_grids(_quiet) > 0 and project.finish_grids(_quiet) == 0
    grids_page = (site / "s000-the-cat-sat-on-the-mat.html").read_text()
    assert "data-updating=" not in grids_page and 'id="ar-chart-scaling-grid"' in grids_page
    assert GRIDS_UPDATING not in (site / "index.html").read_text()
    assert (site / "results" / "render.json").read_bytes() == stored  # the moment is not stored
    _assert_agrees(_fresh_results(config, tmp_path / "fresh"), results)
    # The notes are titled as the grids they stand for.
    drawn = load(results)
    for key in ("scaling-grid", "mean-grid", "mean-grid-before-rotation"):
        entry = entry_of(key)
        assert place(entry, page_inputs(drawn, 0)).figure.title == entry.title

    # An edit of sentence 3: the grids are read back and nothing is left.
    edited = [*SENTENCES]
    edited[3] = "le chat dort sur the mat ."
    (tmp_path / "sentences.txt").write_text("\n".join(edited) + "\n", encoding="utf-8")
    assert not project.build(_quiet, defer_grids=True).grids_left
    assert "data-updating=" not in (site / "s000-the-cat-sat-on-the-mat.html").read_text()
    # Sentence 0 is: they are left again, and the file of the old text's grids is gone.
    edited[0] = "the mat sat on the cat ."
    (tmp_path / "sentences.txt").write_text("\n".join(edited) + "\n", encoding="utf-8")
    assert project.build(_quiet, defer_grids=True).grids_left
    assert not (results / "interventions.json.gz").exists()
    # Such a folder is complete: ``analyze --resume`` runs the grids it lacks.
    copy = tmp_path / "left"
    shutil.copytree(results, copy)
    args = ["analyze", "--config", str(config), "--out", str(copy), "--resume"]
    assert CliRunner().invoke(main, args).exit_code == 0
    assert load(copy).interventions is not None

    # A session stopped before they ran leaves them to the next one, which runs them.
    again = Project(config, {})
    resumed = again.build(_quiet, defer_grids=True)
    assert (resumed.analysis, resumed.grids_left) == ("none", True)
    assert not again.build(_quiet).grids_left  # a build that does not defer them runs them
    assert "data-updating=" not in (site / "s000-the-mat-sat-on-the-cat.html").read_text()
    _assert_agrees(_fresh_results(config, tmp_path / "fresh-2"), results)
