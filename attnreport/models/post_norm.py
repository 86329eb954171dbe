"""A post-attention norm: the block's output normalised before it is added to the hidden state.

Gemma 2 and 3 and OLMo 2 add ``y = g * z / rms(z)`` to the residual stream, not the
attention block's output ``z = sum_h u_h + b_o`` itself, with
``rms(z) = sqrt(mean(z^2) + eps)`` per token and a gain ``g`` per dimension (Gemma's
``1 + w``, OLMo 2's ``w``). The norm multiplies each token's ``z`` by one vector,
``g / rms(z)``, so a head's exact share of what the block adds is
``c_h = u_h * g / rms(z)``, and the shares (with ``b_o`` scaled alike) sum to ``y``.

Discovery finds the norm as the block's child that reads exactly the attention module's
output, and keeps it only when this form reproduces what it wrote (``decomposes``):
a LayerNorm, which also subtracts a mean, or a norm without a readable epsilon is not
kept, and the update sizes stay those before the norm.
"""

from __future__ import annotations

import torch
from torch import nn

LARGE = 1e4  # the probe's value: rms(LARGE * 1) = LARGE within eps / LARGE^2 (1e-14 relative)


def epsilon(norm: nn.Module) -> float | None:
    """The norm's epsilon (Gemma's ``eps``, OLMo 2's ``variance_epsilon``), or None."""
    for name in ("eps", "variance_epsilon"):
        value = getattr(norm, name, None)
        if isinstance(value, int | float):
            return float(value)
    return None


def gain(norm: nn.Module, width: int, device: torch.device) -> torch.Tensor:
    """(width,) float32: the norm's per-dimension gain g, read by running its own forward on
    a constant float32 input, which it normalises to ones times g (``forward``, not
    ``__call__``: no hooks run, so it may be read from inside one)."""
    probe = torch.full((1, width), LARGE, dtype=torch.float32, device=device)
    with torch.no_grad():
        return norm.forward(probe)[0].float().detach()


def _gain_or_none(norm: nn.Module, width: int, device: torch.device) -> torch.Tensor | None:
    """``gain``, or None for a norm that cannot run on a float32 input (a bfloat16
    ``nn.LayerNorm``: not an RMSNorm the models upcast inside)."""
    try:
        return gain(norm, width, device)
    except RuntimeError:
        return None


def token_scale(z: torch.Tensor, eps: float, g: torch.Tensor) -> torch.Tensor:
    """(query, model) float32: g / rms(z) for each token of ``z`` (query, model), computed
    as the models compute it (float32, ``rsqrt(mean(z^2) + eps)``)."""
    z = z.float()
    return torch.rsqrt(z.pow(2).mean(-1, keepdim=True) + eps) * g.to(z.device)


def decomposes(norm: nn.Module, z: torch.Tensor, y: torch.Tensor) -> bool:
    """Whether ``y = norm(z)`` is ``z * token_scale(z)`` (both (..., model)), within the
    rounding of ``y``'s dtype: the norm is an RMSNorm whose shares per head sum to it."""
    eps = epsilon(norm)
    if eps is None or z.shape != y.shape or not z.is_floating_point():
        return False
    g = _gain_or_none(norm, z.shape[-1], z.device)
    if g is None:
        return False
    flat = z.reshape(-1, z.shape[-1])
    expected = flat.float() * token_scale(flat, eps, g)
    bound = 2 * torch.finfo(y.dtype).eps  # y's own rounding, half an ulp, twice
    return torch.allclose(expected, y.reshape(flat.shape).float(), rtol=bound, atol=1e-6)
