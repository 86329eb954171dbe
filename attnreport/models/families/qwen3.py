"""Qwen3: routes its attention through the transformers attention interface."""

from attnreport.models.families.base import InterfaceFamily

FAMILY = InterfaceFamily(
    name="Qwen3",
    model_types=("qwen3",),
    positional="rope",
    verified=("gqa", "qk_norm"),
)
