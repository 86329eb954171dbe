"""Column tables and the JSON-safe rounding every results file uses.

A ``Table`` maps a column name to a 1-D numpy array; every column has the same length
(see ``docs/results-schema.md``). Ids and positions are int64, statistics float64,
flags bool, labels str. Floats are published rounded to 6 significant digits, exactly as
``float(f"{v:.6g}")`` rounds them, so two runs give byte-identical JSON.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

Table = dict[str, np.ndarray]

SIG_DIGITS = 6
_POW10 = np.array([float(10**i) for i in range(23)])  # 1e0 .. 1e22, all exact in float64
_HALF_TOL = 1e-7  # far above the 1e-10 error of the scaled mantissa, far below 0.5


def as_numpy(values: Any) -> np.ndarray:
    """A numpy view or copy of ``values`` (tensor, array or list); half floats become float64."""
    if isinstance(values, torch.Tensor):
        values = values.detach().cpu()
        if values.is_floating_point() and values.dtype != torch.float32:
            values = values.to(torch.float64)
        return values.numpy()
    return np.asarray(values)


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


def round_sig(x: Any) -> Any:
    """Round to 6 significant digits exactly as ``float(f"{v:.6g}")`` does.

    A Python or numpy scalar gives a float; a tensor or array gives a float64 ndarray of the
    same shape (vectorised). Rounding is idempotent. Raises ValueError on NaN or inf.
    """
    if isinstance(x, (bool, int, float, np.number)):
        return _round_one(float(x))
    return _round_array(as_numpy(x))


def concat_tables(tables: Sequence[Table]) -> Table:
    """Rows of ``tables`` one after the other; all must have the same column names.

    An empty sequence gives an empty table ``{}``. Column order is the first table's.
    """
    if not tables:
        return {}
    names = list(tables[0])
    for table in tables[1:]:
        if set(table) != set(names):
            raise ValueError(f"cannot concatenate tables with columns {names} and {list(table)}")
    return {name: np.concatenate([as_numpy(t[name]) for t in tables]) for name in names}


def table_length(table: Table) -> int:
    """Number of rows; raises ValueError when columns differ in length or are not 1-D."""
    lengths = {name: np.shape(values) for name, values in table.items()}
    if any(len(shape) != 1 for shape in lengths.values()):
        raise ValueError(f"table columns must be 1-D, got shapes {lengths}")
    if len({shape[0] for shape in lengths.values()}) > 1:
        raise ValueError(f"table columns differ in length: {lengths}")
    return next(iter(lengths.values()))[0] if lengths else 0


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


def column_to_list(values: Any) -> list[Any]:
    """One column as JSON-ready Python values: bool, int, rounded float, str or None."""
    array = as_numpy(values)
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


def table_to_json(table: Table) -> dict[str, dict[str, list[Any]]]:
    """``{"columns": {name: [values...]}}`` with floats rounded (see ``round_sig``).

    Raises ValueError on NaN/inf or columns of different lengths. Same input, same output:
    ``json.dumps`` of two calls is byte-identical.
    """
    table_length(table)
    return {"columns": {name: column_to_list(values) for name, values in table.items()}}


def triangle(matrix: Any, allowed: Any = None) -> list[list[Any]]:
    """Causal lower triangle of an (n, n) matrix as a ragged list: row ``i`` keeps keys 0..i.

    Floats are rounded as ``round_sig``; ints stay ints and bools stay bools. Entries above
    the diagonal are never read (they may be -inf). Where ``allowed`` (n, n) bool is given,
    float entries inside the triangle that it masks (e.g. outside a sliding window) become
    ``None`` (JSON null) instead of the model's fill value.
    """
    array = as_numpy(matrix)
    if array.ndim != 2 or array.shape[0] != array.shape[1]:
        raise ValueError(f"triangle needs a square matrix, got shape {array.shape}")
    n = array.shape[0]
    rows, cols = np.tril_indices(n)
    values = array[rows, cols]  # row-major: row i's keys 0..i are contiguous
    if values.dtype.kind == "f":
        keep = as_numpy(allowed).astype(bool)[rows, cols] if allowed is not None else None
        values = _round_array(values if keep is None else np.where(keep, values, 0.0))
        if keep is not None and not keep.all():
            values = values.astype(object)
            values[~keep] = None
    elif values.dtype.kind in "iu":
        values = values.astype(np.int64)
    flat = values.tolist()
    ends = (np.arange(1, n + 1) * np.arange(2, n + 2) // 2).tolist()
    return [flat[end - i - 1 : end] for i, end in enumerate(ends)]
