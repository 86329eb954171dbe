"""Tiny random-weight models of each supported family, saved like a user's local model.

Built from configs in the tests (no download): 2-3 layers, float32, with the features
that make each family hard: GQA and RoPE (Llama, Qwen2 with q/k/v biases), ALiBi and
fused biased qkv (BLOOM), fused Conv1D qkv and absolute positions (GPT-2).
"""

from __future__ import annotations

from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import (
    BloomConfig,
    BloomForCausalLM,
    GPT2Config,
    GPT2LMHeadModel,
    LlamaConfig,
    LlamaForCausalLM,
    MistralConfig,
    MistralForCausalLM,
    PreTrainedTokenizerFast,
    Qwen2Config,
    Qwen2ForCausalLM,
)

WORDS = [
    "<unk>",
    "<s>",
    "the",
    "a",
    "cat",
    "dog",
    "mouse",
    "chased",
    "sat",
    "on",
    "mat",
    "what",
    "does",
    "attention",
    "mechanism",
    "focus",
    "?",
    ".",
    ",",
    "and",
    "le",
    "chat",
    "dort",
    "def",
    "add",
    "(",
    ")",
    ":",
    "return",
    "+",
    "b",
    "x",
    "y",
]


def tiny_tokenizer() -> PreTrainedTokenizerFast:
    vocab = {word: i for i, word in enumerate(WORDS)}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", bos_token="<s>")


def _configs() -> dict[str, tuple[object, type]]:
    vocab = len(WORDS)
    common = {"vocab_size": vocab, "bos_token_id": 1, "eos_token_id": 1, "pad_token_id": 0}
    return {
        "llama": (
            LlamaConfig(
                hidden_size=48,
                intermediate_size=64,
                num_hidden_layers=3,
                num_attention_heads=6,
                num_key_value_heads=2,
                max_position_embeddings=128,
                **common,
            ),
            LlamaForCausalLM,
        ),
        "qwen2": (
            Qwen2Config(
                hidden_size=32,
                intermediate_size=64,
                num_hidden_layers=2,
                num_attention_heads=4,
                num_key_value_heads=2,
                max_position_embeddings=128,
                **common,
            ),
            Qwen2ForCausalLM,
        ),
        "mistral": (
            MistralConfig(
                hidden_size=32,
                intermediate_size=64,
                num_hidden_layers=2,
                num_attention_heads=4,
                num_key_value_heads=1,
                max_position_embeddings=128,
                sliding_window=4,  # shorter than the test sentences: the mask is not just causal
                **common,
            ),
            MistralForCausalLM,
        ),
        "bloom": (BloomConfig(hidden_size=32, n_layer=2, n_head=4, **common), BloomForCausalLM),
        "gpt2": (
            GPT2Config(n_embd=32, n_layer=2, n_head=4, n_positions=128, **common),
            GPT2LMHeadModel,
        ),
    }


FAMILY_NAMES = tuple(_configs())


def save_tiny_model(name: str, directory: Path, seed: int = 0) -> Path:
    """Build the tiny ``name`` model with random weights and ``save_pretrained`` it."""
    config, cls = _configs()[name]
    torch.manual_seed(seed)
    model = cls(config).eval()
    if name == "qwen2":  # random init leaves biases at zero; make them matter
        with torch.no_grad():
            for layer in model.model.layers:
                for proj in (
                    layer.self_attn.q_proj,
                    layer.self_attn.k_proj,
                    layer.self_attn.v_proj,
                ):
                    proj.bias.normal_(0, 0.5)
    directory.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(directory)
    tiny_tokenizer().save_pretrained(directory)
    return directory


def byte_tokenizer() -> PreTrainedTokenizerFast:
    """One token per UTF-8 byte (GPT-2's byte alphabet, no merges): any text has tokens,
    and a multi-byte character decodes token by token to replacement characters."""
    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    tok = Tokenizer(models.BPE(vocab={c: i for i, c in enumerate(alphabet)}, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    return PreTrainedTokenizerFast(tokenizer_object=tok)


def save_byte_model(directory: Path, seed: int = 0) -> Path:
    """A tiny GPT-2 over bytes: for tests that feed it arbitrary, hostile text."""
    torch.manual_seed(seed)
    config = GPT2Config(
        vocab_size=256,
        n_embd=16,
        n_layer=2,
        n_head=2,
        n_positions=512,
        bos_token_id=0,
        eos_token_id=0,
    )
    GPT2LMHeadModel(config).eval().save_pretrained(directory)
    byte_tokenizer().save_pretrained(directory)
    return directory
