"""The packed column form of the site's data: ``{"b": [d, w, "BASE64"], "x": [...]}``.

``BASE64`` (standard alphabet, padded) holds signed little-endian integers of ``w`` bytes
(``w`` in 1, 2, 4); value ``i`` is integer ``i`` divided by ``10**d`` (``d = 0``: the
integer itself), except at the indices of the optional ``"x": [i0, v0, i1, v1, ...]``,
whose values are v0, v1, ... as written (their integer slots hold 0).

Exactness: decoding gives the very numbers that ``JSON.parse`` of the plain array gives.
``q / 10**d`` with ``|q| < 2**31`` and ``10**d`` exact (``d <= 22``) is one correctly
rounded division in Python and in JavaScript alike. The encoder packs v only where the
division of ``q6 = rint(v * 10**6)`` by ``10**6`` gives v back (checked for each value),
as ``q = q6 / 10**(6 - d)`` when that is an integer: the same quotient, so the same
float. The other values are exceptions. Python decoding writes integral results as
ints, as ``codec`` writes them.

A float column of the site rounded to 3 or 4 decimals packs into 2 or 4 bytes a value
(2.7 or 5.3 base64 characters) where its JSON decimals take about 6. Only the site uses
this form (``codec.encode_column(values, binary=True)``); results files stay readable.
"""

from __future__ import annotations

import base64
import binascii
import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from attnreport.jsontypes import Json

MAX_DECIMALS = 6  # the site rounds to 3 or 4; 6 keeps 6-significant-digit values < 10
_SCALE = 10**MAX_DECIMALS
_MAX_D = 22  # 10**d is exact in float64 up to here: the decoder accepts d <= 22
_WIDTHS = (1, 2, 4)  # bytes
_LIMITS = tuple(2 ** (8 * w - 1) for w in _WIDTHS)  # the encoder packs |q| < limit
_REGULAR = (1e-4, 1e9)  # |v| whose repr is fixed-point with <= 15 significant digits
_EXACT_INT = 2**53


def _count_reached(values: np.ndarray, thresholds: list[int]) -> np.ndarray:
    """How many of the increasing ``thresholds`` each value reaches (one pass for each
    threshold up to the largest value: most columns reach only a few)."""
    out = np.zeros(len(values), dtype=np.int64)
    top = values.max(initial=0)
    for threshold in thresholds:
        if threshold > top:
            break
        out += values >= threshold
    return out


def _digits(magnitude: np.ndarray) -> np.ndarray:
    """Decimal digits of each non-negative integer."""
    return 1 + _count_reached(magnitude, [10**k for k in range(1, 20)])


def _index_digits(n: int) -> np.ndarray:
    """``_digits(arange(n))``: 10 one-digit indices, 90 two-digit ones, ..."""
    counts = [min(n, 10**k) - (10 ** (k - 1) if k > 1 else 0) for k in range(1, len(str(n)) + 1)]
    return np.repeat(np.arange(1, len(counts) + 1), np.maximum(counts, 0))[:n]


@functools.cache
def _fewest_decimals() -> np.ndarray:
    """For r in 0..10**6 - 1, the decimals of r / 10**6 once trailing zeros are dropped."""
    table = np.full(_SCALE, MAX_DECIMALS, dtype=np.int8)  # 1 MB, made once
    for k in range(1, MAX_DECIMALS + 1):
        table[:: 10**k] -= 1
    return table


@dataclass(frozen=True)
class _Scan:
    """What sizes every candidate (d, w) of a column, one entry per value.

    ``q6``: rint(v * 10**6) as an integer where dividing it by 10**6 gives v back exactly
    and it is below the largest threshold (0 elsewhere). For every d >= ``fewest`` (the
    decimals of q6 / 10**6 without trailing zeros; 7 for the others), the integer
    q6 / 10**(6 - d) divided by 10**d is the same quotient, so it too decodes to v.
    Width w holds v at d decimals iff also |q6| < limit(w) * 10**(6 - d): ``thresholds``
    are these bounds for the candidates, increasing, and ``reached`` how many of them
    |q6| reaches (all for the others).
    """

    q6: np.ndarray
    fewest: np.ndarray
    reached: np.ndarray
    thresholds: list[int]

    def top(self, d: int, index: int) -> int:
        """Width ``_WIDTHS[index]`` at d decimals holds the values that reach at most
        this many ``thresholds`` and have at most d decimals."""
        return self.thresholds.index(_LIMITS[index] * 10 ** (MAX_DECIMALS - d))

    def held(self, d: int, index: int) -> np.ndarray:
        return (self.fewest <= d) & (self.reached <= self.top(d, index))


def _scan(array: np.ndarray, decimals: range) -> _Scan:
    """The ``_Scan`` of a finite int64 or float64 column for the candidates' ``decimals``."""
    bounds = {lim * 10 ** (MAX_DECIMALS - d) for lim in _LIMITS for d in decimals}
    thresholds = sorted(bounds)
    values = array.astype(np.float64, copy=False)
    with np.errstate(over="ignore"):  # beyond 1.8e302: inf, which is not exact
        scaled = np.rint(values * float(_SCALE))
    exact = (scaled / float(_SCALE) == values) & (np.abs(scaled) < thresholds[-1])
    q6 = np.where(exact, scaled, 0.0).astype(np.int64)
    magnitude = np.abs(q6)
    fewest = np.where(exact, _fewest_decimals()[magnitude % _SCALE], MAX_DECIMALS + 1)
    fewest = fewest.astype(np.int64)  # it indexes cells of a larger table
    reached = _count_reached(magnitude, thresholds)
    reached[~exact] = len(thresholds)
    return _Scan(q6, fewest, reached, thresholds)


def _json_lengths(plain: Sequence[Any], array: np.ndarray, fewest: np.ndarray) -> np.ndarray:
    """Each value's length in JSON, as ``json.dumps(plain[i])``, computed from ``array``
    (int64, or float64 with ``fewest`` exact decimals); Python's ``repr`` only for the
    floats whose text the rule below does not give (tiny, huge, or > 6 decimals).

    A float v = q / 10**k, with k <= 6 its fewest exact decimals and 1e-4 <= |v| < 1e9 (so
    q has at most 15 significant digits), is written fixed-point with the digits of q: no
    other decimal of at most 15 significant digits rounds to the same float, so none is
    shorter. Ints are their digits; a minus sign adds one.
    """
    magnitude = np.abs(array)
    sign = (array < 0).astype(np.int64)  # -0.0 is written as 0
    if array.dtype.kind == "i":  # abs wraps only -2**63, whose uint64 view is right
        return sign + _digits(magnitude.view(np.uint64))
    integral = (np.floor(array) == array) & (magnitude < _EXACT_INT)
    fractional = (fewest > 0) & (fewest <= MAX_DECIMALS)
    fractional &= (magnitude >= _REGULAR[0]) & (magnitude < _REGULAR[1])
    regular = integral | fractional
    whole = np.floor(np.where(regular, magnitude, 0.0)).astype(np.uint64)
    lengths = sign + _digits(whole) + np.where(fractional, 1 + fewest, 0)
    for index in np.flatnonzero(~regular).tolist():
        lengths[index] = len(repr(plain[index]))
    return lengths


def _form_size(d: int, w: int, n: int, exceptions: int, exception_chars: int) -> int:
    """Length of ``{"b":[d,w,"..."]}`` (with ``,"x":[...]`` holding ``exceptions`` pairs
    of ``exception_chars`` characters in all, commas included, when there are any)."""
    size = len(f'{{"b":[{d},{w},""]}}') + 4 * (-(-n * w // 3))
    return size + (exception_chars + len(',"x":[]') - 1 if exceptions else 0)


def smallest_size(n: int) -> int:
    """No packed form of n values is shorter than this."""
    return _form_size(0, 1, n, 0, 0)


def packed_column(
    plain: Sequence[Any], kinds: set[type], array: np.ndarray
) -> tuple[dict[str, list[Any]], int, int] | None:
    """The shortest packed form of a numeric column, its JSON length, and the length of
    the plain array; None when the column is not all finite numbers (``plain``: the
    compacted values; ``array``: the same, int64 or float64, as ``codec`` compares them).

    Every d in 0..MAX_DECIMALS (0 only for ints) and width is sized from counts, without
    building the forms; values that a candidate cannot hold exactly are its exceptions.
    """
    if not plain or array.dtype.kind not in "if" or not np.isfinite(array).all():
        return None
    decimals = range(1 if kinds == {int} else MAX_DECIMALS + 1)
    scan = _scan(array, decimals)
    lengths = _json_lengths(plain, array, scan.fewest)
    n = len(plain)
    cost = _index_digits(n) + lengths + 2  # an exception adds index, value and 2 commas
    # counts and costs of the values by (fewest, reached), summed over fewest <= d and
    # reached <= top: what each candidate holds
    shape = (MAX_DECIMALS + 2, len(scan.thresholds) + 1)
    cell = scan.fewest * shape[1] + scan.reached
    held = np.bincount(cell, minlength=shape[0] * shape[1]).reshape(shape)
    held_cost = np.bincount(cell, weights=cost, minlength=held.size).reshape(shape)
    held, held_cost = held.cumsum(0).cumsum(1), held_cost.cumsum(0).cumsum(1)
    total_cost = int(cost.sum())
    sizes = {}
    for d in decimals:
        for index, w in enumerate(_WIDTHS):
            top = scan.top(d, index)
            chars = total_cost - round(held_cost[d, top])
            sizes[d, index] = _form_size(d, w, n, n - int(held[d, top]), chars)
    d, index = min(sizes, key=sizes.__getitem__)  # the first smallest: fewest decimals
    plain_size = int(lengths.sum()) + n + 1
    return _build(plain, scan, d, index), sizes[d, index], plain_size


def _build(plain: Sequence[Any], scan: _Scan, d: int, index: int) -> dict[str, list[Any]]:
    w = _WIDTHS[index]
    held = scan.held(d, index)
    ints = (np.where(held, scan.q6, 0) // 10 ** (MAX_DECIMALS - d)).astype(f"<i{w}")
    form: dict[str, list[Any]] = {"b": [d, w, base64.b64encode(ints.tobytes()).decode("ascii")]}
    missing = np.flatnonzero(~held).tolist()
    if missing:
        form["x"] = [v for i in missing for v in (i, plain[i])]
    return form


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def unpacked_numbers(encoded: Json) -> np.ndarray:
    """The numbers of a packed form before its exceptions: int64 for d = 0, else float64
    (``codec.decode_column`` writes the integral ones as ints and applies
    ``apply_exceptions``); ValueError, in one line, when malformed."""
    spec = encoded["b"]
    if not isinstance(spec, list) or len(spec) != 3:
        raise ValueError("a packed column is not [decimals, width, base64]")
    d, w, text = spec
    if not isinstance(text, str):
        raise ValueError("a packed column's data is not a base64 string")
    if type(d) is not int or not 0 <= d <= _MAX_D:
        raise ValueError(f"a packed column has decimals {d!r}, not 0..{_MAX_D}")
    if type(w) is not int or w not in _WIDTHS:
        raise ValueError(f"a packed column has width {w!r}, not 1, 2 or 4")
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, TypeError, ValueError) as err:
        raise ValueError(f"a packed column's base64 is malformed ({err})") from None
    if len(raw) % w:
        raise ValueError(f"a packed column has {len(raw)} bytes, not a multiple of {w}")
    ints = np.frombuffer(raw, dtype=f"<i{w}").astype(np.int64)
    return ints if d == 0 else ints / float(10**d)


def apply_exceptions(values: list[Any], exceptions: Any) -> None:
    """Write a packed form's ``"x"`` pairs over ``values``; ValueError when malformed."""
    if not isinstance(exceptions, list) or len(exceptions) % 2:
        raise ValueError("a packed column's exceptions are not [index, value, ...] pairs")
    for index, value in zip(exceptions[::2], exceptions[1::2], strict=True):
        if type(index) is not int or not 0 <= index < len(values):
            raise ValueError(f"a packed column's exception index {index!r} is out of range")
        if not _number(value):
            raise ValueError(f"a packed column's exception {value!r} is not a number")
        values[index] = value
