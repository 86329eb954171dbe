"""GPT-2: routes its attention through the transformers attention interface."""

from attnreport.models.families.base import InterfaceFamily

FAMILY = InterfaceFamily(
    name="GPT-2",
    model_types=("gpt2",),
    positional="absolute",
    verified=("fused_qkv", "qkv_bias"),
)
