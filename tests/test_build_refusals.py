"""build never writes over a user's files: each refusal is one line and changes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from attnreport.cli import main


@pytest.fixture
def sentences(tmp_path) -> Path:
    path = tmp_path / "s.txt"
    path.write_text("the cat sat on the mat\n")
    return path


def build(model: Path, sentences: Path, out: Path, *extra: str):
    args = [
        "build",
        "--model",
        str(model),
        "--sentences",
        str(sentences),
        "--out",
        str(out),
        "--no-images",
        *extra,
    ]
    result = CliRunner().invoke(main, args)
    return result.exit_code, result.output


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_output_path_that_is_a_file(tmp_path, tiny_model_dirs, sentences):
    target = tmp_path / "report.html"
    target.write_text("mine")
    code, output = build(tiny_model_dirs["gpt2"], sentences, target)
    assert code == 1 and "is a file" in output and target.read_text() == "mine"


def test_output_folder_holding_the_sentences(tmp_path, tiny_model_dirs, sentences):
    code, output = build(tiny_model_dirs["gpt2"], sentences, tmp_path, "--force")
    assert code == 1 and "contains the input" in output
    assert sentences.read_text() == "the cat sat on the mat\n"


def test_foreign_folder_needs_force_then_rebuilds_are_free(tmp_path, tiny_model_dirs, sentences):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "notes.md").write_text("my notes")
    before = snapshot(docs)
    code, output = build(tiny_model_dirs["gpt2"], sentences, docs)
    assert code == 1 and "--force" in output and output.count("error:") == 1
    assert snapshot(docs) == before
    code, output = build(tiny_model_dirs["gpt2"], sentences, docs, "--force")
    assert code == 0, output
    assert (docs / "index.html").is_file() and (docs / ".attnreport-site").is_file()
    code, output = build(
        tiny_model_dirs["gpt2"], sentences, docs
    )  # our own site now: no --force needed
    assert code == 0, output
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".attnreport-tmp-")]


def test_failed_build_keeps_the_previous_site(tmp_path, tiny_model_dirs, sentences):
    out = tmp_path / "site"
    assert build(tiny_model_dirs["gpt2"], sentences, out)[0] == 0
    before = snapshot(out)
    code, output = build(tiny_model_dirs["gpt2"], sentences, out, "--intervene-layer", "9")
    assert code == 1 and "out of range" in output
    assert snapshot(out) == before


def test_sentence_longer_than_map_tokens_builds_without_its_map(
    tmp_path, tiny_model_dirs, sentences
):
    config = tmp_path / "c.toml"
    config.write_text("map_tokens = 4\n")
    code, output = build(
        tiny_model_dirs["llama"], sentences, tmp_path / "out", "--config", str(config)
    )
    assert code == 0, output
    page = next((tmp_path / "out").glob("s000-*.html")).read_text()
    assert "the attention map figure is left out" in page
    assert 'data-key="attention-map"' not in page and 'data-key="attention-breakdown"' in page
