"""The model card: what the manifest says of the model, in the words a reader expects.

``CARD`` lists the rows in order, each with the manifest keys it is read from (searched
anywhere in the manifest, so keys a later version adds under ``extra`` are found).
Two rows are described rather than copied: the positions name the scheme (RoPE with its
base and scaling, ALiBi, absolute embeddings) and the tokenizer names its algorithm and
vocabulary size, never a Python class (results before schema 9 recorded only the class:
the card says so).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any

from attnreport.results import Manifest
from attnreport.results.manifest import ModelInfo
from attnreport.site.layer_card import layer_rows
from attnreport.site.words.chat import chat_words
from attnreport.text import visible

CARD = (  # (label, keys tried in order, anywhere in the manifest)
    ("Model", ("model_id", "id", "name", "path")),
    ("Parameters", ("parameters",)),
    ("Weights from", WEIGHTS_KEYS := ("weights",)),
    ("Quantisation", ("quantisation",)),
    ("Source", ("source",)),
    ("Architecture", ("family", "architecture")),
    ("Model type", ("model_type",)),
    ("Layers", ("n_layers", "num_layers", "num_hidden_layers")),
    ("Heads", ("n_heads", "num_heads", "num_attention_heads")),
    ("KV heads", ("n_kv_heads", "num_kv_heads", "num_key_value_heads")),
    ("Head size", ("head_dim",)),
    ("Hidden size", ("hidden_size",)),
    ("Context", ("context", "max_position_embeddings")),
    ("Positions", ("positional", "positional_scheme")),
    ("BOS token", ("bos_token",)),
    ("Chat template", ()),
    ("Attention", ("attn_implementation", "attention_implementation")),
    ("Dtype", ("dtype", "torch_dtype")),
    ("Device", ("device",)),
    ("Tokenizer", ("tokenizer_class", "tokenizer")),
    ("attnreport", ("attnreport_version",)),
    ("Revision", ("revision",)),
    ("Fingerprint", ("fingerprint", "sha256")),
)
SCHEMES = {
    "alibi": "ALiBi (a per-head bias linear in the distance to the key)",
    "absolute": "absolute position embeddings, added to the input",
    "none": "none found",
}
ROPE_SCALING = {  # transformers' rope_type -> its name in words
    "linear": "linear scaling",
    "dynamic": "dynamic NTK scaling",
    "yarn": "YaRN scaling",
    "llama3": "Llama 3 scaling",
    "longrope": "LongRoPE scaling",
}


def find(tree: Any, keys: Sequence[str]) -> Any:
    """The first scalar under any of ``keys``, searching ``tree`` breadth first."""
    level = [tree]
    while level:
        for key in keys:
            for node in level:
                if isinstance(node, Mapping) and isinstance(node.get(key), str | int | float):
                    return node[key]
        level = [
            v for n in level if isinstance(n, Mapping) for v in n.values() if isinstance(v, Mapping)
        ]
    return None


def card_tree(manifest: Manifest) -> dict[str, Any]:
    """What a card's keys are looked up in (``find``): the version and the model's facts,
    the keys this version does not know (``ModelInfo.extra``) one level further down."""
    return {"attnreport_version": manifest.attnreport_version, "model": asdict(manifest.model)}


def _rope_part(layers: str, params: Mapping[str, Any]) -> str:
    """``base θ = 10,000 in sliding attention layers`` (with its scaling, if any)."""
    text = f"base θ = {params['theta']:,.0f}"
    scaling = ROPE_SCALING.get(str(params.get("type")), str(params.get("type")))
    if params.get("type") not in (None, "default"):
        factor = f" ×{params['factor']:g}" if "factor" in params else ""
        original = params.get("original_context")
        text += f", {scaling}{factor}" + (f" from {original:,} positions" if original else "")
    return text + (f" in {layers.replace('_', ' ')} layers" if layers else "")


def positions_words(model: ModelInfo) -> str:
    """The position scheme: ``RoPE, base θ = 100,000`` (per layer type where they differ),
    ``ALiBi (...)``, ``absolute position embeddings, ...``."""
    scheme = model.positional.lower()
    if scheme != "rope":
        return SCHEMES.get(scheme, scheme or "unknown")
    if not model.rope:
        return "RoPE (rotary; results before schema 9 do not record its base)"
    return "RoPE, " + "; ".join(_rope_part(k, p) for k, p in model.rope.items())


def tokenizer_words(model: ModelInfo) -> str:
    """``byte-level BPE, 49,152 tokens``; an older folder's class name, said to be one."""
    if not model.vocab_size:
        return f"{model.tokenizer} (its class; results before schema 9 record no more)"
    kind = model.tokenizer_kind or "a tokenizer of a kind attnreport does not name"
    return f"{kind}, {model.vocab_size:,} tokens"


def card_value(manifest: Manifest, label: str, keys: Sequence[str]) -> Any:
    """The value of one card row (None or "" when the manifest lacks it)."""
    if label == "Positions":
        return positions_words(manifest.model)
    if label == "Tokenizer":
        return tokenizer_words(manifest.model)
    if label == "Chat template":
        return chat_words(manifest, "card")
    return find(card_tree(manifest), keys)


def _card_text(label: str, value: Any) -> str:
    """``134.5 million`` for a parameter count; any other value as text."""
    if label == "Parameters" and isinstance(value, int):
        return f"{value:,} ({value / 1e6:.1f} million)"
    return str(value)


def model_card(manifest: Manifest) -> tuple[tuple[str, str], ...]:
    """(label, value) rows of the model card; rows the manifest lacks are left out."""
    out = []
    for label, keys in CARD:
        value = card_value(manifest, label, keys)
        if label == "Source" and card_value(manifest, "Weights from", WEIGHTS_KEYS):
            continue  # "Weights from" names the kind of source too ("GGUF file ...", "hub: ...")
        if value is not None and value != "":
            out.append((label, visible(_card_text(label, value))))
        if label == "Positions":  # how each layer attends, as found at load (version 6)
            out += layer_rows(manifest.model.layers, manifest.model.head_dim)
    return tuple(out)
