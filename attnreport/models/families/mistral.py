"""Mistral: routes its attention through the transformers attention interface."""

from attnreport.models.families.base import InterfaceFamily

FAMILY = InterfaceFamily(
    name="Mistral",
    model_types=("mistral",),
    positional="rope",
    verified=("gqa", "sliding_window"),
)
