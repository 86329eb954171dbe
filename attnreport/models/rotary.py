"""Undo a layer's rotary transform, found by trying the model's own rotation, not assumed.

Models apply their ``apply_rotary_pos_emb`` in three ways: to the whole head (Llama,
Qwen, Gemma; GPT-NeoX, whose function itself leaves the dims past the rotary width
alone), to its first ``r`` dims with the rest passed through by the attention module
(Phi, StableLM, Persimmon), or to its last ``r`` dims after ``r`` plain ones (latent
attention: DeepSeek V2/V3, MiniCPM3). ``inverse_for`` picks the first of these that
maps the q, k the model scored back onto the q, k the same attention module computes
with an identity rotation (cos = 1, sin = 0), within the dtype's tolerance; a layer
none of them fits is refused in one line.

Shapes: q (head, n, d), k (kv_head, n, d); cos, sin (batch, n, r) as the model passed them.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from functools import partial

import torch
from torch import nn

from attnreport import tolerance as tol
from attnreport.errors import AttnReportError

Rotate = Callable[..., tuple[torch.Tensor, torch.Tensor]]


def rotary_function(attn: nn.Module) -> Rotate | None:
    """The model's own ``apply_rotary_pos_emb``, from the module defining its attention."""
    return getattr(sys.modules[type(attn).__module__], "apply_rotary_pos_emb", None)


def on_prefix(rotate: Rotate, q, k, cos, sin):
    """``rotate`` on the first ``r = cos.shape[-1]`` dims of q and k; the rest unchanged."""
    r = cos.shape[-1]
    q_r, k_r = rotate(q[..., :r], k[..., :r], cos, sin)
    return torch.cat([q_r, q[..., r:]], -1), torch.cat([k_r, k[..., r:]], -1)


def on_suffix(rotate: Rotate, q, k, cos, sin):
    """``rotate`` on the last ``r`` dims of q and k (latent attention: plain dims first)."""
    r = cos.shape[-1]
    q_r, k_r = rotate(q[..., -r:], k[..., -r:], cos, sin)
    return torch.cat([q[..., :-r], q_r], -1), torch.cat([k[..., :-r], k_r], -1)


def per_tensor(rotate: Rotate, q, k, cos, sin):
    """A rotation written for one tensor at a time, ``rotate(x, cos, sin)`` (Gemma 4), on q and k."""
    return rotate(q, cos, sin), rotate(k, cos, sin)


def unrotate(rotate: Rotate, q, k, cos, sin):
    """q, k (heads, n, d) before the rotation: the model's rotation run backwards.

    A rotation (possibly scaled, partial or interleaved) with (cos, sin) is undone by
    the same function with (cos, -sin) / (cos^2 + sin^2).
    """
    norm = cos * cos + sin * sin
    q_u, k_u = rotate(q[None], k[None], cos / norm, -sin / norm)
    return q_u[0], k_u[0]


def identity(rotary: object) -> object:
    """Position embeddings that rotate nothing: (cos, sin) -> (1, 0)."""
    if isinstance(rotary, tuple) and len(rotary) == 2:
        cos, sin = rotary
        return torch.ones_like(cos), torch.zeros_like(sin)
    return None


def rotated_dims(rotate: Rotate, rotary, head_dim: int) -> int:
    """How many of a head's ``head_dim`` dims ``rotate`` changes at some position past the
    first (in float32): ``head_dim`` for a full rotation, fewer for a partial one."""
    cos, sin = (t.float() for t in rotary)
    x = torch.randn(1, 1, cos.shape[-2], head_dim, generator=torch.Generator().manual_seed(0))
    y, _ = rotate(x, x, cos.cpu(), sin.cpu())
    return int((~torch.all(y[..., 1:, :] == x[..., 1:, :], dim=-2)).sum())


def _candidates(fn: Rotate | None, r: int, d: int) -> list[Rotate]:
    if fn is None:
        return []
    if list(inspect.signature(fn).parameters)[1:2] == ["cos"]:  # rotate(x, cos, sin)
        fn = partial(per_tensor, fn)
    if r >= d:
        return [fn]
    return [fn, partial(on_prefix, fn), partial(on_suffix, fn)]


def _error(rotate: Rotate, rotary, scored, plain) -> float:
    """Largest |unrotated - plain| over q and k, in float32."""
    cos, sin = (t.float() for t in rotary)
    try:
        q_u, k_u = unrotate(rotate, scored[0].float(), scored[1].float(), cos, sin)
    except (RuntimeError, TypeError):  # a candidate of the wrong width or form for this layer
        return float("inf")
    if q_u.shape != plain[0].shape or k_u.shape != plain[1].shape:
        return float("inf")
    return max(
        (q_u - plain[0].float()).abs().max().item(), (k_u - plain[1].float()).abs().max().item()
    )


def inverse_for(attn: nn.Module, layer: int, rotary, scored, plain) -> Rotate:
    """The rotation whose inverse maps ``scored`` (q, k as scored) onto ``plain`` (q, k with
    an identity rotation), or a one-line refusal naming the layer."""
    q = scored[0]
    magnitude = max(t.float().abs().max().item() for t in (*scored, *plain))
    bound = tol.tolerance(q.dtype, magnitude, inner=4, roundings=4)
    fn = rotary_function(attn)
    for rotate in _candidates(fn, int(rotary[0].shape[-1]), int(q.shape[-1])):
        if _error(rotate, rotary, scored, plain) <= bound:
            return rotate
    what = (
        "has no apply_rotary_pos_emb"
        if fn is None
        else "rotates in a way its apply_rotary_pos_emb does not undo"
    )
    raise AttnReportError(
        f"layer {layer}: {type(attn).__name__} rotates q and k but {what} "
        "(missing: an invertible rotary transform)"
    )
