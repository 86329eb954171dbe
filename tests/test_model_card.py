"""The model card names the position scheme (RoPE with its base and scaling) and the
tokenizer (its algorithm and vocabulary size), never a Python class name."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers
from transformers import Gemma3TextConfig, GPT2Config, LlamaConfig, PreTrainedTokenizerFast

from attnreport.models.described import rope_facts, tokenizer_kind
from attnreport.results import load
from attnreport.site.model_card import model_card, positions_words, tokenizer_words
from tests.fixtures.fake_results import fake_study, typed
from tests.tiny_models import byte_tokenizer, tiny_tokenizer

LLAMA3 = {
    "rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
    "high_freq_factor": 4.0, "original_max_position_embeddings": 8192,
}  # fmt: skip


def test_rope_parameters_are_read_from_the_config():
    assert rope_facts(LlamaConfig(rope_theta=100000.0)) == {"": {"theta": 1e5, "type": "default"}}
    scaled = rope_facts(LlamaConfig(max_position_embeddings=131072, rope_parameters=LLAMA3))
    assert scaled == {"": {"theta": 5e5, "type": "llama3", "factor": 8.0, "original_context": 8192}}
    gemma = rope_facts(Gemma3TextConfig(rope_theta=1e6))
    assert list(gemma) == ["full_attention", "sliding_attention"]
    assert gemma["full_attention"]["theta"] == 1e6 and gemma["sliding_attention"]["theta"] == 1e4
    assert rope_facts(GPT2Config()) == {}


def sentencepiece_bpe(byte_fallback: bool) -> PreTrainedTokenizerFast:
    """A BPE tokenizer as SentencePiece models load: spaces become ▁, bytes fall back."""
    vocab = {"<unk>": 0, "▁": 1, "a": 2, "b": 3, "▁a": 4}
    tok = Tokenizer(models.BPE(vocab, [("▁", "a")], unk_token="<unk>", byte_fallback=byte_fallback))
    tok.normalizer = normalizers.Replace(" ", "▁")
    tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback()])
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>")


def unigram() -> PreTrainedTokenizerFast:
    tok = Tokenizer(models.Unigram([("<unk>", 0.0), ("▁a", -1.0), ("b", -2.0)], 0))
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>")


@pytest.mark.parametrize(
    ("make", "kind"),
    [
        (byte_tokenizer, "byte-level BPE"),
        (lambda: sentencepiece_bpe(True), "SentencePiece BPE with byte fallback"),
        (lambda: sentencepiece_bpe(False), "SentencePiece BPE"),
        (unigram, "Unigram (SentencePiece)"),
        (tiny_tokenizer, "word-level"),
    ],
)
def test_the_tokenizers_algorithm_is_named(make, kind):
    assert tokenizer_kind(make()) == kind


def described(positional: str = "rope", rope=None, kind="byte-level BPE", vocab=49152):
    results = typed(fake_study(1, n_layers=1, n_heads=2))
    model = replace(results.manifest.model, positional=positional, rope=rope or {},
                    tokenizer_kind=kind, vocab_size=vocab, tokenizer="GPT2TokenizerFast")  # fmt: skip
    return replace(results.manifest, model=model)


def test_the_card_names_the_scheme_and_the_tokenizer_not_classes():
    card = dict(model_card(described(rope={"": {"theta": 1e5, "type": "default"}})))
    assert card["Positions"] == "RoPE, base θ = 100,000"
    assert card["Tokenizer"] == "byte-level BPE, 49,152 tokens"
    assert "GPT2TokenizerFast" not in json.dumps(card)
    gemma = {"full_attention": {"theta": 1e6, "type": "default"},
             "sliding_attention": {"theta": 1e4, "type": "default"}}  # fmt: skip
    assert positions_words(described(rope=gemma).model) == (
        "RoPE, base θ = 1,000,000 in full attention layers; base θ = 10,000 in sliding "
        "attention layers"
    )
    yarn = {"": {"theta": 1e4, "type": "yarn", "factor": 4.0, "original_context": 32768}}
    assert positions_words(described(rope=yarn).model) == (
        "RoPE, base θ = 10,000, YaRN scaling ×4 from 32,768 positions"
    )
    assert positions_words(described("alibi").model).startswith("ALiBi")
    assert positions_words(described("absolute").model).startswith("absolute position embeddings")


def test_an_older_folder_says_what_it_did_not_record():
    older = described(rope={}, kind="", vocab=0).model
    assert positions_words(older) == "RoPE (rotary; results before schema 9 do not record its base)"
    assert tokenizer_words(older) == (
        "GPT2TokenizerFast (its class; results before schema 9 record no more)"
    )


def test_an_analysis_records_what_the_card_shows(tmp_path, tiny_model_dirs):
    from click.testing import CliRunner

    from attnreport.cli import main

    (tmp_path / "s.txt").write_text("the cat sat on the mat\n", encoding="utf-8")
    args = [
        "analyze",
        "--model",
        str(tiny_model_dirs["llama"]),
        "--sentences",
        str(tmp_path / "s.txt"),
    ]
    done = CliRunner().invoke(main, [*args, "--out", str(tmp_path / "r")])
    assert done.exit_code == 0, done.output
    manifest = load(tmp_path / "r").manifest
    config = LlamaConfig.from_pretrained(tiny_model_dirs["llama"])
    theta = config.rope_parameters["rope_theta"]
    assert manifest.model.rope == {"": {"theta": theta, "type": "default"}}
    assert manifest.model.tokenizer_kind == "word-level" and manifest.model.vocab_size > 0
    card = dict(model_card(manifest))
    assert card["Positions"] == f"RoPE, base θ = {theta:,.0f}"
    assert card["Tokenizer"] == f"word-level, {manifest.model.vocab_size:,} tokens"


def test_the_source_kind_is_a_row_only_where_no_weights_row_names_it():
    """The "Weights from" row says "GGUF file x.gguf" or "Hugging Face Hub: org/name": a "Source:
    gguf" row beside it says nothing more; a folder written before it has only "Source"."""
    study = typed(fake_study(1, n_layers=1, n_heads=2))
    model = study.manifest.model
    named = replace(model, source="gguf", extra={**model.extra, "weights": "GGUF file m.gguf"})
    card = dict(model_card(replace(study.manifest, model=named)))
    assert card["Weights from"] == "GGUF file m.gguf" and "Source" not in card
    older = replace(model, source="gguf", extra={k: v for k, v in model.extra.items()
                                                 if k != "weights"})  # fmt: skip
    card = dict(model_card(replace(study.manifest, model=older)))
    assert card["Source"] == "gguf" and "Weights from" not in card
