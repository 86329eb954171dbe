"""The example's sentence set (``example/passages.txt``): at least 200 distinct passages of
48 to 96 tokens under both example models' tokenizers, counted as the report counts them,
every one at least the 64 tokens Gu et al.'s sink rate is defined on."""

from __future__ import annotations

from pathlib import Path

import pytest

from attnreport.sentences import read_sentences, tokenize_sentences

ROOT = Path(__file__).resolve().parent.parent
PASSAGES = ROOT / "example" / "passages.txt"
MODELS = ("default", "gemma-3-270m")  # the example's models (attnreport.toml)
SHORTEST, LONGEST = 48, 96  # tokens, both tokenizers, special tokens included
GU_LENGTH = 64  # Gu et al.'s sink rate is defined on inputs of at least this many tokens


def raw_lines() -> list[str]:
    return PASSAGES.read_text(encoding="utf-8").splitlines()


def test_the_set_is_at_least_200_distinct_one_line_passages():
    lines = raw_lines()
    assert len(lines) >= 200
    assert all(line and line == line.strip() for line in lines)  # no blank or padded line
    assert len(set(lines)) == len(lines), "a passage is repeated"
    assert read_sentences(PASSAGES) == lines  # the report reads every line, in this order


def test_the_source_and_licence_are_named_beside_the_set():
    words = (PASSAGES.parent / "README.md").read_text(encoding="utf-8")
    assert "CC0 1.0" in words and "written for attnreport" in words
    assert f"{len(raw_lines())} passages" in words


def token_counts(model: str) -> list[int]:
    """Tokens of every passage as the report's analysis makes them (the model's tokenizer,
    from the cached conversion of its GGUF file, and its default special tokens)."""
    from transformers import AutoTokenizer

    from attnreport.models.loading import convert_gguf, file_sha256, resolve_source

    path = Path(resolve_source(model).location)
    tokenizer = AutoTokenizer.from_pretrained(str(convert_gguf(path, file_sha256(path))))
    sentences = tokenize_sentences(raw_lines(), tokenizer, context=8192)
    return [len(s.token_ids) for s in sentences]


@pytest.mark.slow
@pytest.mark.default_model
@pytest.mark.parametrize("model", MODELS)
def test_every_passage_is_48_to_96_tokens_and_reaches_gus_length(model):
    counts = token_counts(model)
    outside = [(i, n) for i, n in enumerate(counts) if not SHORTEST <= n <= LONGEST]
    assert not outside, f"{model}: passages outside {SHORTEST}-{LONGEST} tokens: {outside}"
    short = [(i, n) for i, n in enumerate(counts) if n < GU_LENGTH]
    assert not short, f"{model}: passages under Gu et al.'s {GU_LENGTH} tokens: {short}"


def test_the_example_runs_on_the_set_and_its_results_rest_on_every_passage():
    """attnreport.toml names the set; the committed results of each model list all its
    passages, and the set tables count every one of them (pages or not)."""
    from attnreport.config import load_settings
    from attnreport.multi.folders import results_folders
    from attnreport.results import load

    settings = load_settings(ROOT / "attnreport.toml")
    assert Path(settings.sentences).resolve() == PASSAGES.resolve()
    for folder in results_folders([ROOT / "site" / "results"]):
        results = load(folder)
        assert [s.text for s in results.manifest.sentences] == raw_lines()
        counted = set(results.set.focus_by_sentence.arrays()["sentence"].tolist())
        assert counted == set(range(len(raw_lines())))
