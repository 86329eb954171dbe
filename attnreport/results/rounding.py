"""Rounding of published numbers: 6 significant digits, exactly as ``float(f"{v:.6g}")``.

Lives in the results package (no torch) so that loading and rendering results never
imports the model stack; ``attnreport.analyses.tables`` re-exports these helpers.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

SIG_DIGITS = 6
PROB_PLACES = 6  # the interventions' observed probabilities: decimal places (see round_places)
# The attention scores s_ij a sentence file keeps (schema 9): decimal places, the digits the
# map shows. Probabilities derived from them are within about 3e-4 of the model's (the
# page shows them to 3 decimals); every statistic is computed before this rounding.
SCORE_PLACES = 3
_POW10 = np.array([float(10**i) for i in range(23)])  # 1e0 .. 1e22, all exact in float64
_HALF_TOL = 1e-7  # far above the 1e-10 error of the scaled mantissa, far below 0.5


def _round_one(value: float) -> float:
    if not np.isfinite(value):
        raise ValueError(f"cannot publish a non-finite number: {value!r}")
    return float(f"{value:.{SIG_DIGITS}g}")


def _scaled(magnitude: np.ndarray, exponent: np.ndarray) -> np.ndarray:
    """``magnitude * 10**(5 - exponent)`` with an exact power of ten (clipped to 1e+-22)."""
    k = (SIG_DIGITS - 1) - exponent
    return _times_pow10(magnitude, k)


def _times_pow10(values: np.ndarray, k: np.ndarray) -> np.ndarray:
    """``values * 10**k`` elementwise, multiplying or dividing by an exact power of ten."""
    power = _POW10[np.minimum(np.abs(k), 22)]
    out = np.empty_like(values)
    np.multiply(values, power, out=out, where=k >= 0)
    np.divide(values, power, out=out, where=k < 0)
    return out


def _round_array(values: np.ndarray) -> np.ndarray:
    """Vectorised ``float(f"{v:.6g}")``: bit-identical, with the rare hard cases done by Python.

    With ``m = |v| * 10**k`` in [1e5, 1e6) and ``10**k`` exact, ``rint(m) / 10**k`` is the
    correctly rounded value of the 6-digit decimal, i.e. what ``float(str)`` returns. Only
    when ``m`` is within ``_HALF_TOL`` of a half (where the float product may round the other
    way) or ``|k| > 22`` (inexact power) do we fall back to string formatting.
    """
    v = np.asarray(values, dtype=np.float64)
    if not np.isfinite(v).all():
        raise ValueError("cannot publish a non-finite number (NaN or inf)")
    magnitude = np.abs(v)
    nonzero = magnitude > 0
    safe = np.where(nonzero, magnitude, 1.0)
    exponent = np.floor(np.log10(safe)).astype(np.int64)
    m = _scaled(safe, exponent)
    exponent = exponent + (m >= 1e6) - (m < 1e5)  # log10 can be one off near powers of ten
    m = _scaled(safe, exponent)
    k = (SIG_DIGITS - 1) - exponent
    rounded = _times_pow10(np.rint(m), -k)
    out = np.copysign(np.where(nonzero, rounded, 0.0), v)
    hard = nonzero & ((np.abs(m - np.floor(m) - 0.5) < _HALF_TOL) | (np.abs(k) > 22))
    for index in np.flatnonzero(hard):
        out.flat[index] = _round_one(float(v.flat[index]))
    return out


def round_places(values: Any, places: int = PROB_PLACES) -> np.ndarray:
    """``values`` (float64 array) rounded to ``places`` decimal places: within
    ``0.5 * 10**-places`` of each value, and 0 below half of it.

    The interventions' observed probabilities are kept so (``docs/results-schema.md``):
    six significant digits of a probability of 1e-9 are noise that gzip cannot compress,
    and they made the interventions file of a 163-token input 8.5 MB instead of 4.6.
    Rounding the result again to 6 significant digits (``triangle_list`` does) changes nothing
    for a value in [0, 1].
    """
    array = np.asarray(values, dtype=np.float64)
    return np.rint(array * float(10**places)) / float(10**places)


def column_to_list(values: Any) -> list[Any]:
    """One column as JSON-ready Python values: bool, int, rounded float, str or None."""
    array = np.asarray(values)
    kind = array.dtype.kind
    if kind == "b":
        return array.tolist()
    if kind in "iu":
        return array.astype(np.int64).tolist()
    if kind == "f":
        return _round_array(array).tolist()
    if kind == "U":
        return array.tolist()
    return [_json_scalar(value) for value in array.tolist()]


def _json_scalar(value: Any) -> Any:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return _round_one(float(value))
    raise TypeError(f"cannot publish a {type(value).__name__} in a table column")


def rounded(values: Iterable[float], decimals: int) -> list[float]:
    """Python floats rounded to ``decimals`` places (correctly rounded, so JSON stays short):
    ``[round(float(v), decimals) for v in values]``, bit for bit, vectorised
    (``rounded_array``)."""
    source = values if isinstance(values, np.ndarray) else list(values)
    if not 0 <= decimals <= 15:
        return [round(v, decimals) for v in np.asarray(source, dtype=np.float64).tolist()]
    return rounded_array(np.asarray(source, dtype=np.float64), decimals).tolist()


def rounded_array(array: np.ndarray, decimals: int) -> np.ndarray:
    """``rounded`` as a float64 array (NaN stays NaN), for 0 <= ``decimals`` <= 15.

    ``rint(v * 10**d) / 10**d`` is ``round(v, d)`` whenever ``v * 10**d`` is not within
    float error of a half (the integer is then the exact decimal rounding, and the
    division is correctly rounded to the nearest double of that decimal, which is what
    ``round`` returns); those few values, non-finite ones and ones too large for the
    float error bound are rounded by Python.
    """
    if not 0 <= decimals <= 15:
        raise ValueError(f"rounded_array rounds to 0..15 decimals, not {decimals}")
    array = np.asarray(array, dtype=np.float64)
    if array.ndim != 1:
        return rounded_array(array.reshape(-1), decimals).reshape(array.shape)
    scale = float(10**decimals)  # exact
    with np.errstate(invalid="ignore", over="ignore"):
        scaled = array * scale
        out = np.rint(scaled) / scale
        hard = ~np.isfinite(scaled) | (np.abs(scaled) >= 2.0**31)
        hard |= np.abs(scaled - np.floor(scaled) - 0.5) < 1e-6
    for index in np.flatnonzero(hard).tolist():
        out[index] = round(float(array[index]), decimals)
    return out


def triangle_list(
    array: np.ndarray, allowed: np.ndarray | None = None, places: int | None = None
) -> list[list[Any]]:
    """Causal lower triangle of an (n, n) array as the results files keep it: a ragged
    list whose row ``i`` keeps keys 0..i.

    Floats are rounded to 6 significant digits (as ``column_to_list``), or to ``places``
    decimal places when given (``rounded``; -0.0 written as 0); ints stay ints and
    bools stay bools. Entries above the diagonal are never read (they may be -inf). Where ``allowed`` (n, n) bool is given,
    float entries inside the triangle that it masks (e.g. outside a sliding window) become
    ``None`` (JSON null) instead of the model's fill value.
    """
    if array.ndim != 2 or array.shape[0] != array.shape[1]:
        raise ValueError(f"triangle needs a square matrix, got shape {array.shape}")
    n = array.shape[0]
    rows, cols = np.tril_indices(n)
    values = array[rows, cols]  # row-major: row i's keys 0..i are contiguous
    if values.dtype.kind == "f":
        keep = np.asarray(allowed).astype(bool)[rows, cols] if allowed is not None else None
        values = values if keep is None else np.where(keep, values, 0.0)
        if places is None:
            values = _round_array(values)
        else:
            values = np.asarray(rounded(values, places), dtype=np.float64) + 0.0  # no -0.0
        if keep is not None and not keep.all():
            values = values.astype(object)
            values[~keep] = None
    elif values.dtype.kind in "iu":
        values = values.astype(np.int64)
    flat = values.tolist()
    ends = (np.arange(1, n + 1) * np.arange(2, n + 2) // 2).tolist()
    return [flat[end - i - 1 : end] for i, end in enumerate(ends)]
