"""OLMo 2: routes its attention through the transformers attention interface."""

from attnreport.models.families.base import InterfaceFamily

FAMILY = InterfaceFamily(
    name="OLMo 2",
    model_types=("olmo2",),
    positional="rope",
    architecture=("post_attention_norm",),
    verified=("qk_norm", "post_attention_norm"),
)
