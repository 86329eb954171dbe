"""Exact sums of float64 values: each value as an integer in units of 2**-1074.

Every finite float64 is an integer multiple of 2**-1074, so these integers add exactly,
in any order: any split of a set, merged in any order, gives bit-identical totals, and a
pooled value is the exact total rounded once (``corpus.partial``, ``analyses.role_pooling``).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

_SCALE = 2**1074  # 1 / the smallest positive float64: every finite float64 times it is an int


def exact(values: np.ndarray) -> list[int]:
    """Each float64 of ``values`` as the exact integer ``value * 2**1074``."""
    out = []
    for value in np.asarray(values, dtype=np.float64).tolist():
        num, den = value.as_integer_ratio()  # den is a power of two <= 2**1074
        out.append(num * (_SCALE // den))
    return out


def to_float(total: int, divisor: int) -> float:
    """``total * 2**-1074 / divisor`` correctly rounded to float64 (0.0 when divisor is 0)."""
    return float(Fraction(total, _SCALE * divisor)) if divisor else 0.0


def ratio(numerator: int, denominator: int) -> float:
    """Two exact totals (units of 2**-1074) divided, correctly rounded (0.0 over 0)."""
    return float(Fraction(numerator, denominator)) if denominator else 0.0
