"""Phi-3 / Phi-4: routes its attention through the transformers attention interface."""

from attnreport.models.families.base import InterfaceFamily

FAMILY = InterfaceFamily(
    name="Phi-3 / Phi-4",
    model_types=("phi3",),
    positional="rope",
    verified=("gqa", "fused_qkv", "partial_rotary"),
)
