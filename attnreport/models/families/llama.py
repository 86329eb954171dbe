"""Llama 3 / Llama 2: routes its attention through the transformers attention interface."""

from attnreport.models.families.base import InterfaceFamily

FAMILY = InterfaceFamily(
    name="Llama 3 / Llama 2",
    model_types=("llama",),
    positional="rope",
    verified=("gqa",),
)
