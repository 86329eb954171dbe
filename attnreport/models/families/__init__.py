"""The family registry: one module per supported architecture family or adapter.

``family_for(model_type)`` returns the family that covers a ``config.model_type`` or
refuses with the list of what is supported; nothing runs an architecture through
another family's code. To add a family: a module here with a ``FAMILY`` record,
listed in ``_MODULES``, and a tiny model in ``tests/test_families.py``.
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
)
FAMILIES: tuple[Family, ...] = tuple(
    import_module(f"{__name__}.{name}").FAMILY for name in _MODULES
)
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


__all__ = [
    "FAMILIES",
    "POSITIONAL",
    "SUPPORTED_MODEL_TYPES",
    "Family",
    "InterfaceFamily",
    "family_for",
]
