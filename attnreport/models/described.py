"""What a model card says of a model besides its shape: its rotary positions' parameters
and its tokenizer's kind, read from the loaded config and tokenizer (never class names).

``rope_facts(config)``: attention-layer type ("" for every layer) -> ``{"theta": base,
"type": rope_type}``, plus ``factor`` and ``original_context`` for a scaled rotary
(linear, dynamic, YaRN, Llama 3, LongRoPE); {} for a model without rotary parameters.
Read from ``config.rope_parameters`` (transformers 5: one dict, or one per layer type as
Gemma 3's full and sliding layers, sorted by name), else the older ``rope_theta`` and
``rope_scaling``.

``tokenizer_kind(tokenizer)``: "byte-level BPE", "SentencePiece BPE" (with byte fallback
where it has it), "BPE", "Unigram (SentencePiece)", "WordPiece", "word-level",
"SentencePiece" (a slow tokenizer over a SentencePiece model), or "" when none of these is
recognised.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

Json = dict[str, Any]


def _one(params: Mapping[str, Any]) -> Json | None:
    """One rotary parameter set, JSON-ready; None without a base."""
    theta = params.get("rope_theta", params.get("base"))
    if not isinstance(theta, int | float) or isinstance(theta, bool):
        return None
    out: Json = {"theta": float(theta), "type": str(params.get("rope_type") or "default")}
    if isinstance(params.get("factor"), int | float):
        out["factor"] = float(params["factor"])
    original = params.get("original_max_position_embeddings")
    if isinstance(original, int) and not isinstance(original, bool):
        out["original_context"] = original
    return out


def rope_facts(config: Any) -> dict[str, Json]:
    """Layer type ("" for all) -> the rotary parameters of those layers (see the module)."""
    params = getattr(config, "rope_parameters", None)
    if not isinstance(params, Mapping):  # transformers 4: rope_theta and rope_scaling
        theta = getattr(config, "rope_theta", None)
        scaling = getattr(config, "rope_scaling", None) or {}
        params = {"rope_theta": theta, **(scaling if isinstance(scaling, Mapping) else {})}
    if all(isinstance(v, Mapping) for v in params.values()) and params:
        found = {str(kind): _one(p) for kind, p in params.items()}
    else:
        found = {"": _one(params)}
    return {kind: p for kind, p in sorted(found.items()) if p is not None}


def _types(node: Any) -> list[str]:
    """Every ``"type"`` in a tokenizers JSON component and its nested ones."""
    if isinstance(node, Mapping):
        return [str(node.get("type", "")), *(t for v in node.values() for t in _types(v))]
    if isinstance(node, list):
        return [t for v in node for t in _types(v)]
    return []


def tokenizer_kind(tokenizer: Any) -> str:
    """The tokenizer's algorithm in words (see the module); "" when not recognised."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        return "SentencePiece" if hasattr(tokenizer, "sp_model") else ""
    try:
        spec = json.loads(backend.to_str())
    except (AttributeError, ValueError, TypeError):
        return ""
    model = spec.get("model") or {}
    kind = str(model.get("type", ""))
    parts = [spec.get(k) for k in ("normalizer", "pre_tokenizer", "decoder")]
    types = set(_types(parts))
    metaspace = "Metaspace" in types or "\u2581" in json.dumps(parts, ensure_ascii=False)
    if kind == "BPE":
        if "ByteLevel" in types:
            return "byte-level BPE"
        if metaspace:
            return "SentencePiece BPE" + (
                " with byte fallback" if model.get("byte_fallback") else ""
            )
        return "BPE"
    return {
        "Unigram": "Unigram (SentencePiece)",
        "WordPiece": "WordPiece",
        "WordLevel": "word-level",
    }.get(kind, "")
