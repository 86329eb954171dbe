"""attnreport analyze writes complete, documented, byte-reproducible results."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from attnreport.cli import main
from attnreport.results import CURRENT, load, read_json

ROOT = Path(__file__).resolve().parent.parent


def analyze(out: Path, *args: str) -> None:
    result = CliRunner().invoke(main, ["analyze", "--out", str(out), *args])
    assert result.exit_code == 0, result.output


def tree_bytes(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


@pytest.fixture
def two_sentences(tmp_path):
    path = tmp_path / "two.txt"
    path.write_text("the cat chased the mouse\nwhat does attention focus ?\n")
    return path


def test_tiny_results_are_complete_and_reproducible(tmp_path, tiny_model_dirs, two_sentences):
    args = ("--model", str(tiny_model_dirs["llama"]), "--sentences", str(two_sentences))
    analyze(tmp_path / "a", *args)
    analyze(tmp_path / "b", *args)
    a, b = tree_bytes(tmp_path / "a"), tree_bytes(tmp_path / "b")
    assert a == b  # the same zlib on both runs: the same compressed bytes
    assert {
        "manifest.json",
        "set.json.gz",
        "interventions.json.gz",
        "sentences/000.json.gz",
        "sentences/001.json.gz",
    } <= set(a)
    manifest = json.loads(a["manifest.json"])
    assert (
        manifest["model"]["attn_implementation"] == "eager" and manifest["model"]["n_kv_heads"] == 2
    )
    assert [s["token_ids"] for s in manifest["sentences"]][0][:2] == [2, 4]
    sentence = read_json(tmp_path / "a" / CURRENT.sentence(0))
    schema = (ROOT / "docs" / "results-schema.md").read_text()
    for name in sentence["tables"]:
        assert f'"{name}"' in schema or f"{name}:" in schema
    n = sentence["sentence"]["n_tokens"]
    maps = load(tmp_path / "a").sentences[0].attention  # the scores, read from the parts
    assert len(maps.scores[0][0]) == n  # layer 0, head 0: one row per query
    assert "scores" not in sentence["attention"] and "sentences/000/l0.js" in a
    intervention = read_json(tmp_path / "a" / CURRENT.interventions)
    cells = intervention["scaling"]["cells"]  # both sentences scaled; Q or K once, then V
    assert [(c["sentence"], c["target"]) for c in cells] == [
        (s, t) for s in (0, 1) for t in ("QK", "QK", "QK", "V", "V", "V")
    ]
    assert intervention["scaling"]["sentences"] == [0, 1]
    assert intervention["mean"]["sentences"] == [0, 1]


def test_intervention_layer_option(tmp_path, tiny_model_dirs, two_sentences):
    analyze(
        tmp_path / "r",
        "--model",
        str(tiny_model_dirs["gpt2"]),
        "--sentences",
        str(two_sentences),
        "--intervene-layer",
        "0",
    )
    intervention = read_json(tmp_path / "r" / CURRENT.interventions)
    assert intervention["layer"] == 0
    assert intervention["observed_layers"] == {"same": 0, "next": 1, "last": 1}


@pytest.mark.default_model
def test_default_model_results_are_byte_identical_across_runs(tmp_path):
    sentences = tmp_path / "two.txt"
    sentences.write_text("What does the attention mechanism focus on?\nThe cat sat on the mat.\n")
    one = ("--model", "default", "--sentences", str(sentences))  # ./attnreport.toml has two
    analyze(tmp_path / "a", *one)
    analyze(tmp_path / "b", *one)
    assert tree_bytes(tmp_path / "a") == tree_bytes(tmp_path / "b")
