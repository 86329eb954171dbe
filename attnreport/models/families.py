"""How each supported architecture lays out its attention, read from the model's own modules.

A ``Family`` answers the few questions capture needs: where the blocks and their
attention modules are, how to split the projection outputs into per-head q/k/v,
which biases and output weights each head has, and how positions enter the score.
Everything numeric is then computed in one place (``attnreport.attention``) from the
tensors the model itself produced, so a new family only has to describe its layout.

Shapes: ``head`` H query heads, ``kv_head`` H_kv key/value heads, ``d`` head dim,
``model`` hidden size, ``query``/``key`` token positions.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from attnreport.errors import AttnReportError

Split = Callable[[nn.Module, dict[str, torch.Tensor]], tuple[torch.Tensor, ...]]


@dataclass(frozen=True)
class Family:
    """Layout of one architecture family.

    ``projections`` names the submodules of the attention module whose outputs hold
    q, k, v (one fused module or three), ``out_proj`` the output projection.
    ``positional`` is ``"rope"`` (rotation of q and k), ``"alibi"`` (a bias added to the
    score) or ``"absolute"`` (positions are in the embeddings; nothing in the score).
    """

    name: str
    model_types: tuple[str, ...]
    positional: str
    blocks_path: str  # dotted path from the *ForCausalLM to the list of blocks
    attention_attr: str  # attribute of a block holding its attention module
    projections: tuple[str, ...]
    out_proj: str
    out_is_conv1d: bool  # GPT-2's Conv1D stores weight as (in, out)

    def blocks(self, model: nn.Module) -> list[nn.Module]:
        obj: object = model
        for part in self.blocks_path.split("."):
            obj = getattr(obj, part)
        return list(obj)  # type: ignore[call-overload]

    def attention(self, block: nn.Module) -> nn.Module:
        return getattr(block, self.attention_attr)


LLAMA_LIKE = Family(
    name="Llama-like (RoPE)",
    model_types=("llama", "mistral", "qwen2"),
    positional="rope",
    blocks_path="model.layers",
    attention_attr="self_attn",
    projections=("q_proj", "k_proj", "v_proj"),
    out_proj="o_proj",
    out_is_conv1d=False,
)
BLOOM = Family(
    name="BLOOM (ALiBi)",
    model_types=("bloom",),
    positional="alibi",
    blocks_path="transformer.h",
    attention_attr="self_attention",
    projections=("query_key_value",),
    out_proj="dense",
    out_is_conv1d=False,
)
GPT2 = Family(
    name="GPT-2 (absolute positions)",
    model_types=("gpt2",),
    positional="absolute",
    blocks_path="transformer.h",
    attention_attr="attn",
    projections=("c_attn",),
    out_proj="c_proj",
    out_is_conv1d=True,
)
FAMILIES: tuple[Family, ...] = (LLAMA_LIKE, BLOOM, GPT2)
SUPPORTED_MODEL_TYPES: tuple[str, ...] = tuple(t for f in FAMILIES for t in f.model_types)


def family_for(model_type: str) -> Family:
    """The family of a ``config.model_type``, or a one-line error naming those supported."""
    for family in FAMILIES:
        if model_type in family.model_types:
            return family
    supported = ", ".join(SUPPORTED_MODEL_TYPES)
    raise AttnReportError(
        f"architecture '{model_type}' is not supported (supported: {supported}); "
        "attnreport refuses rather than report numbers it cannot verify"
    )


@dataclass(frozen=True)
class HeadLayout:
    """Sizes of one attention module."""

    n_heads: int
    n_kv_heads: int
    head_dim: int
    scaling: float

    @property
    def groups(self) -> int:
        return self.n_heads // self.n_kv_heads


def head_layout(family: Family, attn: nn.Module, config: object) -> HeadLayout:
    """Head counts and the score scale the module itself uses."""
    if family is LLAMA_LIKE:
        n_heads = int(config.num_attention_heads)  # type: ignore[attr-defined]
        n_kv = int(getattr(config, "num_key_value_heads", None) or n_heads)
        return HeadLayout(n_heads, n_kv, int(attn.head_dim), float(attn.scaling))
    if family is BLOOM:
        return HeadLayout(
            int(attn.num_heads),
            int(attn.num_heads),
            int(attn.head_dim),
            float(attn.inv_norm_factor),
        )
    if getattr(attn, "reorder_and_upcast_attn", False) or getattr(
        attn, "is_cross_attention", False
    ):
        raise AttnReportError(
            "GPT-2 variants with reorder_and_upcast_attn or cross-attention are not supported"
        )
    return HeadLayout(
        int(attn.num_heads), int(attn.num_heads), int(attn.head_dim), float(attn.scaling)
    )


def split_qkv(
    family: Family, outputs: list[torch.Tensor], layout: HeadLayout
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per-head q, k, v from the projection outputs (batch removed).

    Returns q (head, query, d), k (kv_head, key, d), v (kv_head, key, d), exactly the
    values the model computed (biases included, before any positional transform).
    """
    n_tokens = outputs[0].shape[0]
    d = layout.head_dim
    if family is LLAMA_LIKE:
        q, k, v = outputs
        return (
            q.view(n_tokens, layout.n_heads, d).transpose(0, 1),  # (head, query, d)
            k.view(n_tokens, layout.n_kv_heads, d).transpose(0, 1),  # (kv_head, key, d)
            v.view(n_tokens, layout.n_kv_heads, d).transpose(0, 1),
        )
    if family is BLOOM:
        fused = outputs[0].view(n_tokens, layout.n_heads, 3, d)  # BLOOM interleaves per head
        return tuple(fused[:, :, i, :].transpose(0, 1) for i in range(3))  # type: ignore[return-value]
    q, k, v = outputs[0].split(layout.n_heads * d, dim=-1)
    return tuple(t.view(n_tokens, layout.n_heads, d).transpose(0, 1) for t in (q, k, v))  # type: ignore[return-value]


def qk_biases(
    family: Family, attn: nn.Module, layout: HeadLayout
) -> tuple[torch.Tensor, torch.Tensor]:
    """b_q (head, d) and b_k (kv_head, d); zeros where the model has no bias."""
    d = layout.head_dim
    if family is LLAMA_LIKE:
        bq, bk = attn.q_proj.bias, attn.k_proj.bias
        zeros_q = torch.zeros(layout.n_heads, d, dtype=attn.q_proj.weight.dtype)
        zeros_k = torch.zeros(layout.n_kv_heads, d, dtype=attn.k_proj.weight.dtype)
        return (
            zeros_q if bq is None else bq.detach().view(layout.n_heads, d),
            zeros_k if bk is None else bk.detach().view(layout.n_kv_heads, d),
        )
    if family is BLOOM:
        fused = attn.query_key_value.bias.detach().view(layout.n_heads, 3, d)
        return fused[:, 0, :], fused[:, 1, :]
    bq, bk, _ = attn.c_attn.bias.detach().split(layout.n_heads * d)
    return bq.view(layout.n_heads, d), bk.view(layout.n_heads, d)


def out_weights(
    family: Family, attn: nn.Module, layout: HeadLayout
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-head output weights W_o^h (head, d, model) and the output bias b_o (model,).

    ``u_i^h = ctx_i^h @ W_o^h`` and the block output is ``sum_h u^h + b_o``.
    """
    proj = getattr(attn, family.out_proj)
    weight = proj.weight.detach()
    if family.out_is_conv1d:
        per_head = weight.view(layout.n_heads, layout.head_dim, -1)  # Conv1D: (in, out)
    else:
        per_head = weight.t().reshape(layout.n_heads, layout.head_dim, -1)  # Linear: (out, in)
    bias = proj.bias
    zeros = torch.zeros(per_head.shape[-1], dtype=weight.dtype)
    return per_head, zeros if bias is None else bias.detach()


def rotary_function(attn: nn.Module) -> Callable[..., tuple[torch.Tensor, torch.Tensor]]:
    """The model's own ``apply_rotary_pos_emb``, taken from the module that defines its attention."""
    module = sys.modules[type(attn).__module__]
    fn = getattr(module, "apply_rotary_pos_emb", None)
    if fn is None:
        raise AttnReportError(
            f"{type(attn).__name__} has no apply_rotary_pos_emb; cannot reproduce its RoPE"
        )
    return fn
