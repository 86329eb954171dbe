"""gpt-oss: routes its attention through the transformers attention interface."""

from attnreport.models.families.base import InterfaceFamily

FAMILY = InterfaceFamily(
    name="gpt-oss",
    model_types=("gpt_oss",),
    positional="rope",
    verified=("gqa", "sinks", "sliding_window", "qkv_bias"),
)
