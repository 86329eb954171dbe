"""Tiny configs of the adapter families (attention that does not call the interface):
GPT-1, GPT-Neo (a local window shorter than the test sentences), XGLM, GPT-J and
CodeGen (rotation of adjacent pairs on part of each head), Falcon (multi-query), Llama 4 (complex rotation). Merged into
``tests.tiny_models``' families."""

from __future__ import annotations

from transformers import (
    CodeGenConfig,
    CodeGenForCausalLM,
    FalconConfig,
    FalconForCausalLM,
    GPTJConfig,
    GPTJForCausalLM,
    GPTNeoConfig,
    GPTNeoForCausalLM,
    Llama4ForCausalLM,
    Llama4TextConfig,
    OpenAIGPTConfig,
    OpenAIGPTLMHeadModel,
    XGLMConfig,
    XGLMForCausalLM,
)


def adapter_configs(common: dict) -> dict[str, tuple[object, type]]:
    """name -> (config, model class); heads of 8 dims, 2 layers, 128 positions."""
    gpt = {"n_embd": 32, "n_layer": 2, "n_head": 4, "n_positions": 128, **common}
    return {
        "openai-gpt": (OpenAIGPTConfig(**gpt), OpenAIGPTLMHeadModel),
        "gptj": (GPTJConfig(rotary_dim=4, **gpt), GPTJForCausalLM),
        "codegen": (CodeGenConfig(rotary_dim=4, n_ctx=128, **gpt), CodeGenForCausalLM),
        "gpt_neo": (
            GPTNeoConfig(
                hidden_size=32,
                num_layers=2,
                num_heads=4,
                attention_types=[[["global", "local"], 1]],
                window_size=4,  # shorter than the test sentences: the mask is not just causal
                max_position_embeddings=128,
                **common,
            ),
            GPTNeoForCausalLM,
        ),
        "falcon": (  # multi-query: one k and v head for the 4 query heads
            FalconConfig(
                hidden_size=32,
                num_hidden_layers=2,
                num_attention_heads=4,
                max_position_embeddings=128,
                **common,
            ),
            FalconForCausalLM,
        ),
        "llama4_text": (  # the rotation handed as complex freqs_cis; an L2 QK-norm
            Llama4TextConfig(
                hidden_size=32,
                intermediate_size=64,
                intermediate_size_mlp=64,
                num_hidden_layers=2,
                num_attention_heads=4,
                num_key_value_heads=2,
                head_dim=8,
                num_local_experts=2,
                max_position_embeddings=128,
                **common,
            ),
            Llama4ForCausalLM,
        ),
        "xglm": (
            XGLMConfig(
                d_model=32,
                num_layers=2,
                attention_heads=4,
                ffn_dim=64,
                max_position_embeddings=128,
                **common,
            ),
            XGLMForCausalLM,
        ),
    }
