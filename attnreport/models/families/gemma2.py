"""Gemma 2: routes its attention through the transformers attention interface."""

from attnreport.models.families.base import InterfaceFamily

FAMILY = InterfaceFamily(
    name="Gemma 2",
    model_types=("gemma2",),
    positional="rope",
    architecture=("post_attention_norm",),
    verified=("gqa", "softcap", "sliding_window", "post_attention_norm"),
)
