"""Tiny random-weight models of each supported family, saved like a user's local model.

Built from configs in the tests (no download): 2-3 layers, float32, with the features
that make each family hard: GQA (Llama), a sliding window shorter than the sentences
(Mistral, Gemma 2/3, gpt-oss), q/k/v biases (Qwen2, StarCoder2, GPT-NeoX, gpt-oss),
QK-norm (Qwen3, OLMo 2, Gemma 3), soft-capping and ``query_pre_attn_scalar`` (Gemma 2),
fused qkv and partial rotary (Phi-3, GPT-NeoX), parallel residual (GPT-NeoX), learned
sinks and a tiny MoE (gpt-oss), ALiBi (BLOOM), absolute positions (GPT-2). Every
attention bias and sink logit is drawn non-zero, so the terms they feed are exercised.
Gemma 3's tokenizer adds a BOS token, as Gemma's does.
"""

from __future__ import annotations

from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors
from transformers import (
    BloomConfig,
    BloomForCausalLM,
    Gemma2Config,
    Gemma2ForCausalLM,
    Gemma3ForCausalLM,
    Gemma3TextConfig,
    GPT2Config,
    GPT2LMHeadModel,
    GPTNeoXConfig,
    GPTNeoXForCausalLM,
    GptOssConfig,
    GptOssForCausalLM,
    LlamaConfig,
    LlamaForCausalLM,
    MistralConfig,
    MistralForCausalLM,
    Olmo2Config,
    Olmo2ForCausalLM,
    Phi3Config,
    Phi3ForCausalLM,
    PreTrainedTokenizerFast,
    Qwen2Config,
    Qwen2ForCausalLM,
    Qwen3Config,
    Qwen3ForCausalLM,
    Starcoder2Config,
    Starcoder2ForCausalLM,
)

from tests.tiny_adapters import adapter_configs

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


# A long input for the tiny models: one token a word ("while" and "slept" read as <unk>)
STORY = ("the", "cat", "chased", "the", "mouse", "on", "the", "mat", "while", "the", "dog", "slept")


def story(n_words: int) -> str:
    """``n_words`` words of ``STORY``, repeated: a tiny-model input of ``n_words`` tokens."""
    return " ".join(STORY[i % len(STORY)] for i in range(n_words))


def tiny_tokenizer(add_bos: bool = False) -> PreTrainedTokenizerFast:
    vocab = {word: i for i, word in enumerate(WORDS)}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    if add_bos:  # like Gemma's tokenizer: every text starts with <s>
        tok.post_processor = processors.TemplateProcessing(
            single="<s> $A", special_tokens=[("<s>", vocab["<s>"])]
        )
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
        **_modern_configs(common),
        "bloom": (BloomConfig(hidden_size=32, n_layer=2, n_head=4, **common), BloomForCausalLM),
        "gpt2": (
            GPT2Config(n_embd=32, n_layer=2, n_head=4, n_positions=128, **common),
            GPT2LMHeadModel,
        ),
        **adapter_configs(common),
    }


def _modern_configs(common: dict) -> dict[str, tuple[object, type]]:
    small = {"hidden_size": 32, "intermediate_size": 64, "max_position_embeddings": 128, **common}
    heads = {"num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 8}
    sliding = ["sliding_attention", "full_attention", "sliding_attention"]
    return {
        "qwen3": (Qwen3Config(num_hidden_layers=2, **heads, **small), Qwen3ForCausalLM),
        "gemma2": (
            Gemma2Config(
                num_hidden_layers=3,
                layer_types=sliding,
                sliding_window=4,
                attn_logit_softcapping=0.02,  # below the random logits (~0.04), so the cap bends them
                query_pre_attn_scalar=12,  # not head_dim: the scale is the model's own
                **heads,
                **small,
            ),
            Gemma2ForCausalLM,
        ),
        "gemma3": (
            Gemma3TextConfig(
                num_hidden_layers=3, layer_types=sliding, sliding_window=4, **heads, **small
            ),
            Gemma3ForCausalLM,
        ),
        "phi3": (
            Phi3Config(
                num_hidden_layers=2,
                num_attention_heads=4,
                num_key_value_heads=2,
                partial_rotary_factor=0.5,
                **small,
            ),
            Phi3ForCausalLM,
        ),
        "gpt_neox": (
            GPTNeoXConfig(
                num_hidden_layers=2,
                num_attention_heads=4,
                rotary_pct=0.25,
                use_parallel_residual=True,
                attention_bias=True,
                **small,
            ),
            GPTNeoXForCausalLM,
        ),
        "olmo2": (
            Olmo2Config(num_hidden_layers=2, **_no_head_dim(heads), **small),
            Olmo2ForCausalLM,
        ),
        "starcoder2": (
            Starcoder2Config(num_hidden_layers=2, use_bias=True, **_no_head_dim(heads), **small),
            Starcoder2ForCausalLM,
        ),
        "gpt_oss": (
            GptOssConfig(
                num_hidden_layers=2,
                layer_types=sliding[:2],
                sliding_window=4,
                num_local_experts=2,
                num_experts_per_tok=1,
                attention_bias=True,
                **heads,
                **small,
            ),
            GptOssForCausalLM,
        ),
    }


def _no_head_dim(heads: dict) -> dict:
    return {k: v for k, v in heads.items() if k != "head_dim"}


FAMILY_NAMES = tuple(_configs())
BOS_FAMILIES = ("gemma3",)  # tokenizers that add a BOS by default


def _perturb_attention(model: torch.nn.Module) -> None:
    """Random init leaves attention biases (and some sink logits) at zero; make them matter."""
    with torch.no_grad():
        for module in model.modules():
            if "Attention" not in type(module).__name__:
                continue
            for name, param in module.named_parameters():
                if name.endswith("bias") or name == "sinks":
                    param.normal_(0, 0.5)


def save_tiny_model(name: str, directory: Path, seed: int = 0) -> Path:
    """Build the tiny ``name`` model with random weights and ``save_pretrained`` it."""
    config, cls = _configs()[name]
    torch.manual_seed(seed)
    model = cls(config).eval()
    _perturb_attention(model)
    directory.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(directory)
    tiny_tokenizer(add_bos=name in BOS_FAMILIES).save_pretrained(directory)
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
