"""``--force`` never deletes silently: it names what it replaces, refuses a repository,
and keeps the old content beside the folder until the next build."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from attnreport.cli import main
from attnreport.errors import AttnReportError
from attnreport.output import MARKER, trash_path, write_site
from attnreport.results import dump
from tests.fixtures.fake_results import fake_study, typed

NEW = {"index.html": b"<h1>new</h1>", MARKER: b""}


def tree(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def users_folder(path: Path) -> dict[str, bytes]:
    path.mkdir()
    (path / "notes.md").write_text("my notes")
    (path / "drafts").mkdir()
    (path / "drafts" / "one.txt").write_text("draft")
    (path / "index.html").write_text("<h1>mine</h1>")
    return tree(path)


def test_force_lists_what_it_replaces_and_keeps_it_until_the_next_build(tmp_path):
    results = write_site(dump(typed(fake_study(2, n_layers=2, n_heads=2))), tmp_path / "r")
    out = tmp_path / "docs"
    before = users_folder(out)
    refused = CliRunner().invoke(main, ["render", str(results), "--out", str(out), "--no-images"])
    assert refused.exit_code == 1 and "drafts/, index.html, notes.md" in refused.output
    assert tree(out) == before
    args = ["render", str(results), "--out", str(out), "--no-images", "--force"]
    forced = CliRunner().invoke(main, args)
    assert forced.exit_code == 0, forced.output
    warning = next(line for line in forced.output.splitlines() if line.startswith("warning:"))
    assert "drafts/, index.html, notes.md" in warning and str(trash_path(out)) in warning
    assert tree(trash_path(out)) == before  # nothing lost
    assert (out / MARKER).is_file() and not (out / "notes.md").exists()
    again = CliRunner().invoke(main, args[:-1])  # our own site now
    assert again.exit_code == 0, again.output
    assert "warning:" not in again.output and not trash_path(out).exists()


def test_force_refuses_a_repository(tmp_path):
    out = tmp_path / "repo"
    users_folder(out)
    (out / ".git").mkdir()
    (out / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    before = tree(out)
    with pytest.raises(AttnReportError, match="holds a .git folder"):
        write_site(NEW, out, force=True)
    assert tree(out) == before and not trash_path(out).exists()


def test_a_long_listing_is_cut(tmp_path):
    out = tmp_path / "many"
    out.mkdir()
    for i in range(12):
        (out / f"f{i:02}.txt").write_text("x")
    with pytest.raises(AttnReportError, match=r"f07\.txt and 4 more\)"):
        write_site(NEW, out)


def _warning(output: str) -> str:
    lines = [line for line in output.splitlines() if line.startswith("warning:")]
    assert len(lines) == 1, output
    return lines[0]


@pytest.mark.parametrize("command", ["analyze", "build"])
def test_force_of_a_model_run_moves_the_users_files_to_the_trash(
    tmp_path, tiny_model_dirs, command
):
    """``analyze`` refills its folder in place and ``build`` swaps a site in: with
    ``--force`` both leave a foreign folder's content, whole, in the trash beside it."""
    sentences = tmp_path / "two.txt"
    sentences.write_text("the cat chased the mouse\nwhat does attention focus ?\n")
    out = tmp_path / "mysite"
    before = users_folder(out)
    args = [command, "--model", str(tiny_model_dirs["llama"]), "--sentences", str(sentences)]
    args += ["--out", str(out)] + (["--no-images"] if command == "build" else [])
    refused = CliRunner().invoke(main, args)
    assert refused.exit_code == 1 and tree(out) == before, refused.output
    forced = CliRunner().invoke(main, [*args, "--force"])
    assert forced.exit_code == 0, forced.output
    warning = _warning(forced.output)
    assert "drafts/, index.html, notes.md" in warning and str(trash_path(out)) in warning
    assert tree(trash_path(out)) == before  # nothing lost
    assert (out / MARKER).is_file() and not (out / "notes.md").exists()


def test_a_file_added_to_a_results_folder_survives_a_fresh_run(tmp_path, tiny_model_dirs):
    """A folder attnreport wrote is emptied before a fresh run (not ``--resume``): what the
    run wrote is removed, a file the user put there goes to the trash."""
    out = tmp_path / "results"
    args = ["analyze", "--model", str(tiny_model_dirs["llama"]), "--out", str(out)]
    first = CliRunner().invoke(main, args)
    assert first.exit_code == 0, first.output
    (out / "my-notes.md").write_text("what I saw")
    again = CliRunner().invoke(main, args)
    assert again.exit_code == 0, again.output
    assert "my-notes.md" in _warning(again.output)
    assert tree(trash_path(out)) == {"my-notes.md": b"what I saw"}
    assert not (out / "my-notes.md").exists() and (out / "manifest.json").is_file()
