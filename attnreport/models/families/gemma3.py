"""Gemma 3 (text): routes its attention through the transformers attention interface."""

from attnreport.models.families.base import InterfaceFamily

FAMILY = InterfaceFamily(
    name="Gemma 3 (text)",
    model_types=("gemma3_text",),
    positional="rope",
    architecture=("post_attention_norm",),
    verified=("gqa", "qk_norm", "sliding_window", "post_attention_norm", "bos"),
)
