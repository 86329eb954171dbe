"""The mean before the rotation: q or k of each head replaced by its mean over positions
taken *before* the rotary rotation, then rotated again per position:
``R_i mean_j(R_j^-1 x_j)``. After the rotation (``mean``) every key is one vector and
attention is uniform by construction; before it, keys keep their positions. Only for
models that rotate q and k; v is not rotated, so its cell would be the ``mean`` one.
"""

from __future__ import annotations

from attnreport.interventions.kinds import Change, Kind, Modifier, on_target, register
from attnreport.models.layout import LayerSpec


def mean_before_rotation(target: str, rotate, rotary: list) -> Modifier:
    """``rotate`` is the model's ``apply_rotary_pos_emb``; ``rotary`` a one-item list the
    attention pre-hook (``_rotary_hook``) fills with the layer's (cos, sin) in the pass."""

    def change(x):  # (heads, n, d) as scored, rotated
        cos, sin = rotary[0]
        norm = cos * cos + sin * sin
        plain = rotate(x[None], x[None], cos / norm, -sin / norm)[0][0]  # rotation undone
        mean = plain.mean(dim=1, keepdim=True).expand_as(plain).contiguous()
        return rotate(mean[None], mean[None], cos, sin)[0][0].to(x.dtype)

    return on_target(target, change)


def _rotary_hook(spec: LayerSpec, sink: list) -> tuple:
    """A pre-hook on the layer's attention that keeps its (cos, sin) in ``sink``."""

    def hook(_module, _args, kwargs):
        sink[:] = [kwargs["position_embeddings"]]

    return ((spec.attention, "pre", hook),)


def _change(spec: LayerSpec, target: str, _setting: float | None) -> Change:
    rotary: list = []
    return Change(mean_before_rotation(target, spec.rotate, rotary), _rotary_hook(spec, rotary))


MEAN_BEFORE_ROTATION = register(
    Kind("mean_before_rotation", _change, ("Q", "K"), lambda spec: spec.rotate is not None)
)
