"""Sentence files: each bad input is one line naming the problem and the fix; nothing is written."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from attnreport.cli import main
from attnreport.sentences import parse_sentences, read_sentences, tokenize_sentences
from tests.tiny_models import tiny_tokenizer


def analyze(tmp_path, model_dir, sentences, *extra):
    result = CliRunner().invoke(
        main,
        [
            "analyze",
            "--model",
            str(model_dir),
            "--sentences",
            str(sentences),
            "--out",
            str(tmp_path / "out"),
            *extra,
        ],
    )
    return result.exit_code, result.output


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (b"", "has no sentences"),
        (b"\n  \n\t\n", "has no sentences"),
        (b"caf\xe9 au lait\n", "is not UTF-8"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "looks binary"),
    ],
)
def test_unreadable_sentence_files(tmp_path, tiny_model_dirs, content, fragment):
    path = tmp_path / "s.txt"
    path.write_bytes(content)
    code, output = analyze(tmp_path, tiny_model_dirs["gpt2"], path)
    assert code == 1 and fragment in output and "Traceback" not in output
    assert len([line for line in output.splitlines() if line.startswith("error:")]) == 1
    assert not (tmp_path / "out").exists()


def test_missing_sentence_file(tmp_path, tiny_model_dirs):
    code, output = analyze(tmp_path, tiny_model_dirs["gpt2"], tmp_path / "nope.txt")
    assert code == 1 and "does not exist" in output


def test_bom_crlf_and_duplicates_are_handled(caplog):
    raw = "\ufeffthe cat sat\r\nthe dog sat\r\n\r\nthe cat sat\rthe end\n".encode()
    with caplog.at_level("WARNING"):
        assert parse_sentences(raw, "s.txt") == ["the cat sat", "the dog sat", "the end"]
    assert "dropped 1 duplicate" in caplog.text


def test_too_long_sentence_errors_or_truncates(tmp_path, tiny_model_dirs, caplog):
    path = tmp_path / "long.txt"
    path.write_text(
        " ".join(["the cat"] * 100) + "\n"
    )  # 200 tokens; the tiny GPT-2 has 128 positions
    code, output = analyze(tmp_path, tiny_model_dirs["gpt2"], path)
    assert (
        code == 1
        and "has 200 tokens but the model's context is 128" in output
        and "--truncate" in output
    )
    assert not (tmp_path / "out").exists()
    code, output = analyze(tmp_path, tiny_model_dirs["gpt2"], path, "--truncate")
    assert code == 0, output
    assert "truncated from 200 to 128 tokens" in output


def test_zero_token_sentence_is_an_error():
    class Empty:
        def __call__(self, text):
            return type("Encoding", (), {"input_ids": []})()

    with pytest.raises(Exception, match="produced no tokens for sentence 1"):
        tokenize_sentences(["   ~~~"], Empty(), 100)


def test_many_sentences_work(tmp_path):
    path = tmp_path / "many.txt"
    path.write_text("".join(f"sentence number {i}\n" for i in range(3000)))
    sentences = read_sentences(path)
    assert len(sentences) == 3000
    tokenized = tokenize_sentences(sentences[:50], tiny_tokenizer(), 128)
    assert [s.index for s in tokenized] == list(range(50))


def test_control_characters_inside_a_sentence_are_kept():
    assert parse_sentences(b"nul \x00 bell \x07 end\n", "s.txt") == ["nul \x00 bell \x07 end"]
