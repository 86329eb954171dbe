"""Qwen2 / Qwen2.5: routes its attention through the transformers attention interface."""

from attnreport.models.families.base import InterfaceFamily

FAMILY = InterfaceFamily(
    name="Qwen2 / Qwen2.5",
    model_types=("qwen2",),
    positional="rope",
    verified=("gqa", "qkv_bias"),
)
