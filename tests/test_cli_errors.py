"""Bad input gives one clear line on stderr and a non-zero exit, never a traceback."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from attnreport.cli import main
from attnreport.models import loading


def run(*args: str):
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output.strip(), result.exception


def assert_one_line_error(args, *fragments: str) -> None:
    code, output, exception = run(*args)
    assert code == 1, output
    assert not isinstance(exception, Exception) or isinstance(exception, SystemExit), exception
    lines = [line for line in output.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, output
    assert "Traceback" not in output
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


@pytest.fixture
def sentence_file(tmp_path):
    path = tmp_path / "s.txt"
    path.write_text("the cat sat on the mat\n")
    return str(path)


def test_missing_model_path(sentence_file):
    assert_one_line_error(
        ["verify", "--model", "./no/such/model.gguf", "--sentences", sentence_file],
        "does not exist",
    )


def test_file_with_bad_magic_is_not_gguf(tmp_path, sentence_file):
    bad = tmp_path / "weights.gguf"
    bad.write_bytes(b"NOPE" + bytes(100))
    assert_one_line_error(
        ["verify", "--model", str(bad), "--sentences", sentence_file], "not a GGUF file"
    )


def test_truncated_gguf(tmp_path, sentence_file, monkeypatch):
    monkeypatch.setenv("ATTNREPORT_CACHE", str(tmp_path / "cache"))
    real = loading.default_gguf_path()
    cut = tmp_path / "cut.gguf"
    with real.open("rb") as handle:
        cut.write_bytes(handle.read(200_000))
    assert_one_line_error(
        ["verify", "--model", str(cut), "--sentences", sentence_file], "corrupt or truncated"
    )
    assert not any((tmp_path / "cache").rglob("*.safetensors")), "no half-written cache entry"


def test_uncached_hub_id_without_network(monkeypatch, sentence_file):
    monkeypatch.setattr(loading, "hub_reachable", lambda timeout=3.0: False)
    assert_one_line_error(
        ["verify", "--model", "someone/not-cached-model", "--sentences", sentence_file],
        "not in the local Hugging Face cache",
        "network",
    )


def test_architecture_that_cannot_be_captured_is_refused_naming_the_layer(tmp_path, sentence_file):
    """XLNet computes its relative attention inline, not through the interface, and no
    adapter routes it there: one line naming the layer, the module and what is missing
    (no list of names decides)."""
    from tests.zoo_models import save_zoo_model

    save_zoo_model("xlnet", tmp_path / "xlnet")
    assert_one_line_error(
        ["verify", "--model", str(tmp_path / "xlnet"), "--sentences", sentence_file],
        "layer 0",
        "XLNetRelativeAttention",
        "AttentionInterface",
    )


def test_model_without_tokenizer(tmp_path, tiny_model_dirs, sentence_file):
    import shutil

    bare = tmp_path / "bare"
    shutil.copytree(tiny_model_dirs["gpt2"], bare)
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        (bare / name).unlink(missing_ok=True)
    assert_one_line_error(
        ["verify", "--model", str(bare), "--sentences", sentence_file], "tokenizer"
    )


def test_directory_without_config(tmp_path, sentence_file):
    (tmp_path / "empty").mkdir()
    assert_one_line_error(
        ["verify", "--model", str(tmp_path / "empty"), "--sentences", sentence_file], "config.json"
    )


def test_verify_passes_on_a_tiny_model(tiny_model_dirs, sentence_file):
    code, output, _ = run(
        "verify", "--model", str(tiny_model_dirs["qwen2"]), "--sentences", sentence_file
    )
    assert code == 0, output
    assert output.count("ok  ") == 3 and "all 3 checks passed" in output


@pytest.mark.default_model
def test_verify_default_model(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the built-in sentences, not the example's attnreport.toml
    code, output, _ = run("verify", "--model", "default")
    assert code == 0, output
    assert "all 3 checks passed on 6 sentence(s)" in output
