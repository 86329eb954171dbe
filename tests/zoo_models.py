"""A zoo: a tiny random model of every decoder-only text ``model_type`` transformers registers.

``zoo_types()`` lists the ``AutoModelForCausalLM`` types whose config is a plain
decoder (no sub-configs, not encoder-decoder, not an encoder family run as a decoder);
``build_zoo_model(type)`` builds one from its default config shrunk to 2 layers of
4 heads of 8 dims (every size field the config has is overridden; per-layer lists are
cut to 2), or returns the one-line reason it does not build that small. Nothing is
downloaded: the weights are random, seeded.
"""

from __future__ import annotations

import os

import pytest
import torch
import transformers

from attnreport.models.families import zoo

# The zoo's outcomes are recorded with one transformers release (``zoo.TRANSFORMERS``, which
# constraints.txt pins). Under another the tests asserting them are skipped, unless
# ATTNREPORT_ZOO_ANY_RELEASE=1 asks to check the installed release against the record
# (README: "Checking another transformers release"): each type whose outcome moved fails.
ANY_RELEASE = os.environ.get("ATTNREPORT_ZOO_ANY_RELEASE") == "1"
RECORDED_RELEASE = transformers.__version__ == zoo.TRANSFORMERS
on_record = pytest.mark.skipif(
    not (RECORDED_RELEASE or ANY_RELEASE),
    reason=f"outcomes recorded with transformers {zoo.TRANSFORMERS} "
    "(ATTNREPORT_ZOO_ANY_RELEASE=1 checks the installed release against them)",
)

VOCAB = 64
SMALL = {
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 8,
    "vocab_size": VOCAB,
    "max_position_embeddings": 64,
    "bos_token_id": 1,
    "eos_token_id": 2,
    "pad_token_id": 0,
    # the same sizes under older names (GPT-2, CTRL, CodeGen, GPT-J, GPT-Neo, OPT...)
    "n_embd": 32,
    "n_layer": 2,
    "n_head": 4,
    "n_positions": 64,
    "n_ctx": 64,
    "num_layers": 2,
    "num_heads": 4,
    "ffn_dim": 64,
    "rotary_dim": 4,
    "emb_dim": 32,
    "n_layers": 2,
    # mixtures of experts: a few small experts
    "num_local_experts": 4,
    "num_experts": 4,
    "n_routed_experts": 4,
    "num_experts_per_tok": 2,
    "moe_intermediate_size": 16,
    "shared_expert_intermediate_size": 16,
    "n_shared_experts": 1,
    "n_group": 1,
    "topk_group": 1,
    "first_k_dense_replace": 1,
    # latent attention (DeepSeek V2/V3, MiniCPM3): ranks and the rotary / plain widths
    "q_lora_rank": 16,
    "kv_lora_rank": 16,
    "qk_rope_head_dim": 4,
    "qk_nope_head_dim": 4,
    "v_head_dim": 8,
    # state-space and linear-attention layers of hybrids
    "mamba_d_state": 8,
    "mamba_n_heads": 4,
    "mamba_d_head": 16,  # mamba_n_heads * mamba_d_head = mamba_expand * hidden_size
    "mamba_d_ssm": 64,
    "attn_layer_period": 2,  # hybrids placing attention every k-th layer: one of the two
    "attn_layer_offset": 1,
    "mamba_d_conv": 4,
    "mamba_expand": 2,
    "mamba_n_groups": 1,
    "ssm_state_size": 8,
    "linear_num_value_heads": 2,
    "linear_num_key_heads": 2,
    "linear_key_head_dim": 8,
    "linear_value_head_dim": 8,
    "conv_L_cache": 3,
    "block_dim": 32,
    "block_ff_dim": 64,
}
N_LAYERS = SMALL["num_hidden_layers"]
EXPERTS = {"num_experts_per_token": 2, "num_expert_group": 1, "topk_group": 1}  # of 4
HYBRID = {  # hybrids whose default layer list has no attention layer to cut: layer 1 attends
    "bamba": {"attn_layer_indices": [1]},
    "granitemoehybrid": {"layer_types": ["linear_attention", "full_attention"]},
    "lfm2_moe": {"layer_types": ["conv", "full_attention"]},  # its default list is None
    "kimi_linear": EXPERTS,  # expert fields under names of their own
    "bailing_hybrid": EXPERTS,
}
# looped models whose default loop starts past the 2 layers: layer 1 is looped, so the tiny
# model runs a layer more than once per pass as the real one does (Dory loops by default)
LOOPED = {
    "inkling2_loop_text": {
        "n_layers_per_attn_res_block": 1,  # the loop's ends must be multiples of it
        "loop_layer_index_start": 1,
        "loop_layer_index_end": 2,
    },
}


def zoo_types() -> list[str]:
    """Decoder-only text types of the installed transformers' ``AutoModelForCausalLM``."""
    from transformers import CONFIG_MAPPING
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    found = []
    for model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        try:
            config_cls = CONFIG_MAPPING[model_type]
            config = config_cls()
        except Exception:  # noqa: BLE001 - a config that needs arguments is no plain decoder
            continue
        plain = not getattr(config_cls, "sub_configs", None) and not config.is_encoder_decoder
        if plain and not hasattr(config, "is_decoder"):
            found.append(model_type)
    return found


def small_config(model_type: str, fill_unset: bool = False, **overrides):
    """The type's default config rebuilt with every ``SMALL`` field it has (so the fields the
    config derives in its constructor follow), per-layer lists cut to ``N_LAYERS``; with
    ``fill_unset`` also the ``SMALL`` fields it declares but leaves None (Ministral's
    ``head_dim``, DeepSeek V2's ``num_experts_per_tok``)."""
    from transformers import CONFIG_MAPPING

    config_cls = CONFIG_MAPPING[model_type]
    defaults = config_cls().to_dict()
    kwargs = {
        k: v
        for k, v in SMALL.items()
        if defaults.get(k) is not None or (fill_unset and k in defaults)
    }
    if "head_dim" in kwargs and "qk_rope_head_dim" in kwargs:  # latent attention: the rotary width
        kwargs["head_dim"] = kwargs["qk_rope_head_dim"]
    if "kv_lora_rank" in kwargs and "num_key_value_heads" in kwargs:  # k is shared by every head
        kwargs["num_key_value_heads"] = kwargs["num_attention_heads"]
    if "unpadded_vocab_size" in defaults:  # Inkling 2's head: one row per token, or saving
        # pads it to vocab_size with a negative count (transformers 5.24's checkpoint layout)
        kwargs["unpadded_vocab_size"] = overrides.get("vocab_size", kwargs["vocab_size"])
    for name, value in defaults.items():
        if (
            isinstance(value, list)
            and len(value) > N_LAYERS
            and name.endswith(("types", "_layers", "block_type"))
        ):
            kwargs[name] = _cut(value)
    shape = {**HYBRID.get(model_type, {}), **LOOPED.get(model_type, {})}
    return config_cls(**{**kwargs, **shape, **overrides})


def _cut(kinds: list) -> list:
    """A per-layer list cut to ``N_LAYERS``, its last entry replaced by a kind the cut lost
    (a hybrid's 2 layers keep both an attention and another kind of layer)."""
    cut = kinds[:N_LAYERS]
    lost = [k for k in dict.fromkeys(kinds) if k not in cut]
    if lost and all(isinstance(k, str) for k in kinds):
        cut[-1] = lost[0]
    return cut


def build_zoo_model(
    model_type: str, seed: int = 0, **overrides
) -> tuple[torch.nn.Module | None, str]:
    """(tiny model in eval mode with eager attention, "") or (None, why it does not build or
    run its own plain forward pass of 8 tokens). A type that does not build from its set
    fields is tried once more with its unset ones filled (``small_config``)."""
    model, why = _built(model_type, seed, False, overrides)
    return (model, why) if model is not None else _built(model_type, seed, True, overrides)


def _built(model_type: str, seed: int, fill_unset: bool, overrides: dict):
    from transformers import AutoModelForCausalLM

    torch.manual_seed(seed)
    try:
        config = small_config(model_type, fill_unset, **overrides)
        model = AutoModelForCausalLM.from_config(config, attn_implementation="eager")
        model = model.float().eval()
        with torch.no_grad():  # a model that cannot run its own plain pass does not build
            model(input_ids=torch.arange(1, 9)[None], use_cache=False)
    except Exception as err:  # noqa: BLE001 - reported as the reason, one line
        return None, f"{type(err).__name__}: {err}".splitlines()[0][:160]
    return model, ""


def save_zoo_model(model_type: str, directory, seed: int = 0, **overrides):
    """The tiny ``model_type`` with the tests' word-level tokenizer (``tiny_models``),
    ``save_pretrained`` to ``directory`` like a user's local model."""
    from tests.tiny_models import WORDS, tiny_tokenizer

    model, why = build_zoo_model(model_type, seed, vocab_size=len(WORDS), **overrides)
    if model is None:
        raise ValueError(f"{model_type} does not build tiny: {why}")
    model.save_pretrained(directory)
    tiny_tokenizer().save_pretrained(directory)
    return directory
