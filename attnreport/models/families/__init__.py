"""The family registry: one module per named architecture family or adapter.

A family record names an architecture (for the manifest and the README table) or, for a
model whose attention does not call the interface (BLOOM), supplies the adapter that
makes it. It admits nothing: every model, named here or not, is admitted by the
self-check at load (``attnreport.verify.verified_layers``), and ``family_for`` gives an
unnamed ``model_type`` a plain interface family named after it. To name a family: a
module here with a ``FAMILY`` record, listed in ``_MODULES``, and a tiny model in
``tests/tiny_models.py`` (``tests/tiny_adapters.py`` for adapters; a hybrid's adapter, and
JetMoE's, DiffLlama's and DeepSeek V2's, are verified in the zoo, ``tests/test_zoo.py``, and their numbers
checked in ``tests/test_zoo_adapters.py``). An adapter is an ``AdapterFamily``
(``adapter.py``): the attention class it replaces and the forward that calls the interface;
where the model has no one output projection, the one it composes (``composed.py``).
"""

from __future__ import annotations

from importlib import import_module

from attnreport.errors import AttnReportError
from attnreport.models.families.base import POSITIONAL, Family, InterfaceFamily

_MODULES = (
    "llama",
    "mistral",
    "qwen2",
    "qwen3",
    "gemma2",
    "gemma3",
    "phi3",
    "gpt_neox",
    "olmo2",
    "starcoder2",
    "gpt_oss",
    "gpt2",
    "bloom",
    "openai_gpt",
    "gpt_neo",
    "xglm",
    "gptj",
    "codegen",
    "falcon",
    "recurrent_gemma",
    "llama4",
    "jetmoe",
    "diffllama",
    "deepseek_v2",
)
FAMILIES: tuple[Family, ...] = tuple(
    import_module(f"{__name__}.{name}").FAMILY for name in _MODULES
)
SUPPORTED_MODEL_TYPES: tuple[str, ...] = tuple(t for f in FAMILIES for t in f.model_types)


def family_for(model_type: str) -> Family:
    """The named family of a ``config.model_type``, else an interface family named after it
    (its positions are found per layer when it loads: ``positional`` is empty)."""
    for family in FAMILIES:
        if model_type in family.model_types:
            return family
    if not model_type:
        raise AttnReportError("the model's config names no model_type")
    return InterfaceFamily(name=model_type, model_types=(model_type,), positional="")


__all__ = [
    "FAMILIES",
    "POSITIONAL",
    "SUPPORTED_MODEL_TYPES",
    "Family",
    "InterfaceFamily",
    "family_for",
]
