""" "Rebuild with" reproduces the report: the command in the About section, run in a clean
copy of the project, gives byte-identical results (and the same site)."""

from __future__ import annotations

import html
import re
import shlex
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from attnreport.cli import main
from attnreport.site.about import LABELS


def tree(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def about_rows(index: str) -> dict[str, str]:
    about = index[index.index('<section id="about">') :]
    pairs = re.findall(r"<dt>(.*?)</dt><dd><code>(.*?)</code></dd>", about, flags=re.S)
    return {html.unescape(label): html.unescape(value) for label, value in pairs}


@pytest.mark.slow
def test_rebuild_with_in_a_clean_copy_gives_byte_identical_results(
    tmp_path, monkeypatch, tiny_model_dirs
):
    project = tmp_path / "project"
    project.mkdir()
    shutil.copytree(tiny_model_dirs["llama"], project / "my model")
    (project / "mine.txt").write_text("the cat sat on the mat\nthe dog chased a mouse\n")
    (project / "report.toml").write_text(
        'sentences = "mine.txt"\ntitle = "Rebuilt"\nimages = false\nbreakdown_ranks = 2\n'
    )
    monkeypatch.chdir(project)
    args = ["build", "--config", "report.toml", "--model", "./my model", "--bos", "always"]
    first = CliRunner().invoke(main, [*args, "--intervene-layer", "1", "--out", "site"])
    assert first.exit_code == 0, first.output
    rows = about_rows((project / "site" / "index.html").read_text(encoding="utf-8"))
    command = rows["Rebuild with"]
    assert command == (
        "attnreport build --config report.toml --model './my model' --bos always "
        "--intervene-layer 1"
    )
    assert rows[LABELS["breakdown_ranks"]] == "2" and rows[LABELS["bos"]] == "always"

    clean = tmp_path / "clean"
    clean.mkdir()
    for name in ("my model", "mine.txt", "report.toml"):
        source = project / name
        (shutil.copytree if source.is_dir() else shutil.copy2)(source, clean / name)
    monkeypatch.chdir(clean)
    words = shlex.split(command)
    assert words[0] == "attnreport"
    again = CliRunner().invoke(main, words[1:])
    assert again.exit_code == 0, again.output
    built, rebuilt = tree(project / "site"), tree(clean / "site")
    results = sorted(name for name in built if name.startswith("results/"))
    assert results and results == sorted(n for n in rebuilt if n.startswith("results/"))
    assert [n for n in results if built[n] != rebuilt[n]] == []
    assert built == rebuilt  # and so the whole site
