"""Tolerances for comparing our float32 reconstructions with a model's own numbers, by dtype.

A check compares a value we recompute in float32 from captured tensors with a reference
the model computed in its dtype (float32, bfloat16 or float16). Two errors separate them:

1. The reference was rounded to the model's dtype ``roundings`` times on its way (each
   rounding moves a value by at most ``u * |value|``, with ``u = eps / 2`` the unit
   roundoff). A bf16 score ``(q . k) * scaling`` is rounded twice (the matmul output,
   then the product with the scaling); a bf16 block output once (the output projection
   accumulates in float32 and rounds its result). No reconstruction can do better.
2. Our float32 sums of ``inner`` products. Rounding errors of a sum of ``inner`` terms grow
   like ``sqrt(inner) * u32 * magnitude`` (the probabilistic bound of Higham and Mary,
   "A new approach to probabilistic rounding error analysis", 2019), where ``magnitude``
   bounds the terms added; ``SAFETY`` covers the constant of that bound.

So ``tolerance = (roundings * u(dtype) + SAFETY * sqrt(inner) * u(float32)) * magnitude``
with ``magnitude`` the largest absolute value among the reference and the values summed
(the terms can be larger than their sum). For float32 models the second term dominates;
for bfloat16 the first: ``u(bf16) = 2^-8``, so a block output of magnitude 185 is only
known to +-0.72, and a fixed ``1e-4 x magnitude`` (0.0185) fails on an exact computation.
"""

from __future__ import annotations

import math

import torch

SAFETY = 4.0


def machine_epsilon(dtype: torch.dtype) -> float:
    """Spacing of the dtype's floats at 1.0 (2^-23 float32, 2^-7 bfloat16, 2^-10 float16)."""
    return float(torch.finfo(dtype).eps)


def unit_roundoff(dtype: torch.dtype) -> float:
    """The largest relative error of rounding a real number to ``dtype``: eps / 2."""
    return machine_epsilon(dtype) / 2


def tolerance(dtype: torch.dtype, magnitude: float, inner: int = 1, roundings: int = 1) -> float:
    """Largest expected |float32 reconstruction - reference computed in ``dtype``|.

    ``magnitude``: max |value| among the reference and the terms summed; ``inner``: how
    many products our float32 computation adds per value (head dim for a score, heads x
    head dim for a block output); ``roundings``: how often the reference was rounded to
    ``dtype`` on its way. ValueError on a negative magnitude or ``inner``/``roundings`` < 0.
    """
    if magnitude < 0 or inner < 1 or roundings < 0:
        raise ValueError(f"bad tolerance inputs: {magnitude=}, {inner=}, {roundings=}")
    ours = SAFETY * math.sqrt(inner) * unit_roundoff(torch.float32)
    return (roundings * unit_roundoff(dtype) + ours) * magnitude


def describe(dtype: torch.dtype, magnitude: float, inner: int = 1, roundings: int = 1) -> str:
    """The rule with its numbers, for ``verify`` to print beside a check."""
    bound = tolerance(dtype, magnitude, inner, roundings)
    name = str(dtype).removeprefix("torch.")
    return (
        f"{bound:.3g} = ({roundings} x u({name}) + {SAFETY:g} x sqrt({inner}) x u(float32))"
        f" x {magnitude:.3g}"
    )
