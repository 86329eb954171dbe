"""GPT-NeoX / Pythia: routes its attention through the transformers attention interface."""

from attnreport.models.families.base import InterfaceFamily

FAMILY = InterfaceFamily(
    name="GPT-NeoX / Pythia",
    model_types=("gpt_neox",),
    positional="rope",
    architecture=("parallel_residual",),
    verified=("fused_qkv", "partial_rotary", "parallel_residual", "qkv_bias"),
)
