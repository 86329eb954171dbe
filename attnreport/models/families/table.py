"""The named families, one row each: what the manifest and the README's family table say.

Columns: the family's name; the ``config.model_type`` values it covers; how positions
enter the score (``base.POSITIONAL``); the features the tiny-model tests verify it with;
the features outside the attention function (post-attention norms, parallel residuals);
and, for a model whose attention does not call the interface, the module of this package
that holds its adapter (``ADAPTER``: the attention class it replaces and the forward that
calls the interface). Lists are space-separated. A family whose attention calls the
interface is a row; an adapter is a row and its module.
"""

from __future__ import annotations

Row = tuple[str, str, str, str, str, str]

# fmt: off
ROWS: tuple[Row, ...] = (
    # name               model types       positions   verified with                                     architecture           adapter
    ("Llama 3 / Llama 2", "llama",          "rope",     "gqa",                                            "",                    ""),
    ("Mistral",           "mistral",        "rope",     "gqa sliding_window",                             "",                    ""),
    ("Qwen2 / Qwen2.5",   "qwen2",          "rope",     "gqa qkv_bias",                                   "",                    ""),
    ("Qwen3",             "qwen3",          "rope",     "gqa qk_norm",                                    "",                    ""),
    ("Gemma 2",           "gemma2",         "rope",     "gqa softcap sliding_window post_attention_norm", "post_attention_norm", ""),
    ("Gemma 3 (text)",    "gemma3_text",    "rope",     "gqa qk_norm sliding_window post_attention_norm bos", "post_attention_norm", ""),
    ("Phi-3 / Phi-4",     "phi3",           "rope",     "gqa fused_qkv partial_rotary",                   "",                    ""),
    ("GPT-NeoX / Pythia", "gpt_neox",       "rope",     "fused_qkv partial_rotary parallel_residual qkv_bias", "parallel_residual", ""),
    ("OLMo 2",            "olmo2",          "rope",     "qk_norm post_attention_norm",                    "post_attention_norm", ""),
    ("StarCoder2",        "starcoder2",     "rope",     "gqa qkv_bias",                                   "",                    ""),
    ("gpt-oss",           "gpt_oss",        "rope",     "gqa sinks sliding_window qkv_bias",              "",                    ""),
    ("GPT-2",             "gpt2",           "absolute", "fused_qkv qkv_bias",                             "",                    ""),
    ("BLOOM",             "bloom",          "alibi",    "alibi fused_qkv qkv_bias",                       "",                    "bloom"),
    ("GPT-1",             "openai-gpt",     "absolute", "fused_qkv qkv_bias",                             "",                    "openai_gpt"),
    ("GPT-Neo",           "gpt_neo",        "absolute", "local_attention",                                "",                    "gpt_neo"),
    ("XGLM",              "xglm",           "absolute", "qkv_bias",                                       "",                    "xglm"),
    ("GPT-J",             "gptj",           "rope",     "rope partial_rotary",                            "",                    "gptj"),
    ("CodeGen",           "codegen",        "rope",     "rope partial_rotary fused_qkv",                  "",                    "codegen"),
    ("Falcon",            "falcon",         "rope",     "rope fused_qkv multi_query",                     "",                    "falcon"),
    ("RecurrentGemma",    "recurrent_gemma", "rope",    "rope partial_rotary gqa",                        "",                    "recurrent_gemma"),
    ("Llama 4",           "llama4_text",    "rope",     "rope qk_norm gqa",                               "",                    "llama4"),
    ("JetMoE",            "jetmoe",         "rope",     "rope gqa output_gate attention_experts",         "",                    "jetmoe"),
    ("DiffLlama",         "diffllama",      "rope",     "rope gqa output_gate differential",              "",                    "diffllama"),
    ("DeepSeek V2",       "deepseek_v2",    "rope",     "rope partial_rotary latent_attention",           "",                    "deepseek_v2"),
)
# fmt: on
