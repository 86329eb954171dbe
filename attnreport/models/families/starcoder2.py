"""StarCoder2: routes its attention through the transformers attention interface."""

from attnreport.models.families.base import InterfaceFamily

FAMILY = InterfaceFamily(
    name="StarCoder2",
    model_types=("starcoder2",),
    positional="rope",
    verified=("gqa", "qkv_bias"),
)
