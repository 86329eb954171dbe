"""The compact column encoding shared by the results files and the site's data files.

A column (a list of JSON values) is written as the shortest of:

- a plain array ``[v0, v1, ...]``;
- run-length ``{"r": [v0, n0, v1, n1, ...]}``: value v0 repeated n0 times, then v1 n1
  times, ...;
- delta run-length ``{"d": [d0, n0, ...]}`` (integer columns only): the run-length form of
  the differences of the values, the first taken from 0, so cumulative sums give them back;
- packed ``{"b": [d, w, "BASE64"]}``, with ``"x": [i0, v0, ...]`` when some values do not
  fit (numeric columns, and only for the site: ``encode_column(values, binary=True)``):
  integers of w bytes divided by ``10**d``, exact to the bit (``attnreport.results.packed``
  describes it). A 3-decimal score takes 2.7 base64 characters instead of about 6. The
  results files never use it: they stay readable JSON, the same bytes as before it.

Before encoding, integral floats are written as ints (``0`` for ``0.0``, and ``0`` for
``-0.0``: the sign of a zero is not kept) and booleans as 0/1, which is shortest in JSON.
``decode_column`` therefore gives back ints for those: a reader that knows a column's kind
converts (``attnreport.results.tables`` does; the site's ``runtime.js`` mirrors this
decoder and lets JavaScript numbers be numbers). Nothing here imports torch or Altair.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from attnreport.jsontypes import Json
from attnreport.results.packed import (
    apply_exceptions,
    packed_column,
    smallest_size,
    unpacked_numbers,
)
from attnreport.results.rounding import _round_array, column_to_list

Encoded = list[Any] | dict[str, list[Any]]
_EXACT_INT = 2**53  # floats below this magnitude convert to int and back exactly
_FORMS = ({"r"}, {"d"}, {"b"}, {"b", "x"})  # the keys of an encoded column that is no array


def _compact(value: Any) -> Any:
    """Integral floats as ints ("0" instead of "0.0"), booleans as 0/1; others unchanged."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, float) and value.is_integer() and abs(value) < _EXACT_INT:
        return int(value)
    return value


def compact_values(values: list[Any]) -> list[Any]:
    """``_compact`` applied to every value, with fast paths for all-int and all-float columns."""
    return _listed(_compacted(values)[0])


def _integral(array: np.ndarray) -> np.ndarray:
    """Which floats are written as ints (see ``_compact``)."""
    return np.isfinite(array) & (array == np.floor(array)) & (np.abs(array) < _EXACT_INT)


def compact_floats(values: np.ndarray) -> list[Any]:
    """``compact_values(values.tolist())`` for a float array, looping in Python only over
    its integral values."""
    return _compact_float_array(np.asarray(values, dtype=np.float64))[0]


def _compact_float_array(array: np.ndarray) -> tuple[list[Any], int]:
    """(``compact_floats(array)``, how many of its values became ints)."""
    integral = _integral(array)
    out = array.tolist()
    for index in np.flatnonzero(integral).tolist():
        out[index] = int(out[index])
    return out, int(np.count_nonzero(integral))


def _compacted(values: list[Any]) -> tuple[Sequence[Any], set[type], np.ndarray]:
    """``compact_values(values)`` (an ``ArrayValues`` for a numpy column), the set of its
    value types, and the same values as an array that compares equal exactly where they
    are equal (``_comparable``), found together: a page's data files encode ~1,000
    columns, and each pass over a column in Python costs more than the encoding in numpy."""
    if isinstance(values, np.ndarray):  # a numeric column kept in numpy (the map parts)
        if values.dtype.kind in "iub":
            array = values.astype(np.int64)
            return ArrayValues(array), {int} if len(array) else set(), array
        array = values.astype(np.float64)
        n_int = int(np.count_nonzero(_integral(array)))
        kinds = ({int} if n_int else set()) | ({float} if n_int < len(array) else set())
        return ArrayValues(array), kinds, array
    kinds = set(map(type, values))
    if values and kinds <= {float}:
        array = np.asarray(values, dtype=np.float64)
        plain, n_int = _compact_float_array(array)
        kinds = ({int} if n_int else set()) | ({float} if n_int < len(plain) else set())
        return plain, kinds, array  # every int here came from a float: exact in float64
    if kinds <= {int}:
        plain = list(values)
    else:
        plain = [_compact(v) for v in values]
        kinds = set(map(type, plain))
    return plain, kinds, _comparable(plain, kinds)


class ArrayValues(Sequence[Any]):
    """A numpy column's compacted values (``_compact`` of each), made one at a time where
    they are read (a run's value, an exception): a map part's columns hold hundreds of
    thousands of values, and their encoded forms read a few of them, or none."""

    def __init__(self, array: np.ndarray) -> None:
        self.array = array

    def __len__(self) -> int:
        return len(self.array)

    def __getitem__(self, index: Any) -> Any:
        if not isinstance(index, int):
            raise TypeError("ArrayValues reads one value at a time")
        return _compact(self.array[index].item())

    def at(self, indices: np.ndarray) -> list[Any]:
        """The values at ``indices``, at once."""
        return ArrayValues(self.array[indices]).tolist()

    def tolist(self) -> list[Any]:
        """Every value, as ``compact_values(array.tolist())`` gives them."""
        if self.array.dtype.kind == "f":
            return _compact_float_array(self.array)[0]
        return self.array.tolist()


def decoded_column(values: Any) -> list[Any]:
    """A table column as a reader of the results file gets it back once decoded:
    rounded as written (``rounding.column_to_list``), then ``compact_values``."""
    array = np.asarray(values)
    if array.dtype.kind == "f":
        return compact_floats(_round_array(array))
    return compact_values(column_to_list(array))


def _comparable(values: list[Any], kinds: set[type]) -> np.ndarray:
    """The values as a numpy array that compares equal exactly where they are equal: a
    numeric one when there is such (fast), else an array of the Python objects (strings,
    nulls, ints too large for int64, ints a float64 would round)."""
    try:
        if kinds <= {int}:
            return np.asarray(values, dtype=np.int64)
        if kinds <= {int, float} and not any(
            type(v) is int and abs(v) >= _EXACT_INT for v in values
        ):
            return np.asarray(values, dtype=np.float64)
    except OverflowError:
        pass
    return np.asarray(values, dtype=object)


def _run_count(array: np.ndarray) -> int:
    """How many runs of equal values ``_runs`` would find in ``array``."""
    return int(np.count_nonzero(array[1:] != array[:-1])) + 1 if len(array) else 0


def _runs(values: Sequence[Any], array: np.ndarray) -> list[Any]:
    """Run-length form [v0, n0, v1, n1, ...] of ``values`` (equal values, as JSON writes
    them, form a run); ``array``: the same values, ``_comparable``."""
    if not values:
        return []
    starts = np.flatnonzero(np.concatenate([[True], array[1:] != array[:-1]]))
    counts = np.diff(np.append(starts, len(values)))
    out: list[Any] = [None] * (2 * len(starts))
    if isinstance(values, ArrayValues):
        out[::2] = values.at(starts)
    else:
        out[::2] = [values[start] for start in starts.tolist()]
    out[1::2] = counts.tolist()
    return out


def _json_size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":")))


def encode_column(values: list[Any], binary: bool = False) -> Encoded:
    """The shortest of: plain array, run-length ``{"r"}``, delta run-length ``{"d"}``,
    and with ``binary`` (the site's data, never results files) packed ``{"b"}``.

    A run-length form is only built and measured when it has fewer entries than the plain
    array (counted first, without building it): the run-length forms hold two per run.
    The packed form is sized from counts (``packed.packed_column``) and taken only when
    strictly shorter than the best of the others.
    """
    plain, kinds, array = _compacted(values)
    form, size = _shortest_readable(plain, kinds, array)
    if not binary or (size is not None and size <= smallest_size(len(plain))):
        return _listed(form)
    packed = packed_column(plain, kinds, array)
    if packed is None:
        return _listed(form)
    packed_form, packed_size, plain_size = packed
    return packed_form if packed_size < (plain_size if size is None else size) else _listed(form)


def _listed(form: Any) -> Encoded:
    """An encoded form whose plain array may still be an ``ArrayValues``, as JSON lists."""
    return form.tolist() if isinstance(form, ArrayValues) else form


def _shortest_readable(
    plain: Sequence[Any], kinds: set[type], array: np.ndarray
) -> tuple[Encoded, int | None]:
    """The shortest of plain, ``{"r"}`` and ``{"d"}``, and its JSON length (None for a
    plain array that was not measured)."""
    candidates: list[Any] = [plain]
    if 2 * _run_count(array) < len(plain):
        candidates.append({"r": _runs(plain, array)})
    if plain and kinds == {int} and array.dtype.kind == "i":  # (not ints past int64)
        deltas = np.diff(array, prepend=0)
        if 2 * _run_count(deltas) < len(plain):
            candidates.append({"d": _runs(ArrayValues(deltas), deltas)})
    if len(candidates) == 1:
        return plain, None
    # The first shortest wins, plain on a tie. A plain array of n values is at least
    # 2n + 1 characters long, so it is only measured when a run form could lose to it.
    sizes = [_json_size(form) for form in candidates[1:]]
    best = min(sizes)
    chosen = candidates[1 + sizes.index(best)]
    if best < 2 * len(plain) + 1:
        return chosen, best
    plain_size = _json_size(_listed(plain))
    return (chosen, best) if best < plain_size else (plain, plain_size)


def _unpack(encoded: Json) -> list[Any]:
    """The values of a packed form (the reference for ``runtime.js``), integral floats as
    ints as everywhere in this codec."""
    numbers = unpacked_numbers(encoded)
    values = numbers.tolist() if numbers.dtype.kind == "i" else compact_floats(numbers)
    apply_exceptions(values, encoded.get("x", []))
    return values


def decode_array(encoded: Any) -> np.ndarray:
    """``decode_column`` of a numeric column as a float64 array, without the list for
    the forms numpy can expand (packed, run-length); ValueError as ``decode_column``."""
    if isinstance(encoded, dict) and set(encoded) in _FORMS and "b" in encoded:
        numbers = unpacked_numbers(encoded).astype(np.float64)
        exceptions = encoded.get("x", [])
        if exceptions:
            values = [0.0] * len(numbers)
            apply_exceptions(values, exceptions)  # (its checks)
            at = np.asarray(exceptions[::2], dtype=np.int64)
            numbers[at] = np.asarray(exceptions[1::2], dtype=np.float64)
        return numbers
    if isinstance(encoded, dict) and set(encoded) in ({"r"}, {"d"}):
        runs = next(iter(encoded.values()))
        if not isinstance(runs, list) or len(runs) % 2:
            raise ValueError("a run-length column has no [value, count, ...] pairs")
        try:
            values = np.repeat(np.asarray(runs[::2], np.float64), np.asarray(runs[1::2], np.int64))
        except (TypeError, ValueError):
            return np.asarray(decode_column(encoded), dtype=np.float64)
        return np.cumsum(values) if "d" in encoded else values
    return np.asarray(decode_column(encoded), dtype=np.float64)


def decode_column(encoded: Any) -> list[Any]:
    """Inverse of ``encode_column`` (the reference for ``runtime.js``); ValueError, in one
    line, for a value that is none of the four forms or a malformed one."""
    if isinstance(encoded, list):
        return list(encoded)
    if not isinstance(encoded, dict) or set(encoded) not in _FORMS:
        raise ValueError("a column is neither an array nor {'r'}, {'d'} or {'b'[, 'x']}")
    if "b" in encoded:
        return _unpack(encoded)
    runs = next(iter(encoded.values()))
    if not isinstance(runs, list) or len(runs) % 2:
        raise ValueError("a run-length column has no [value, count, ...] pairs")
    values = [v for v, n in zip(runs[::2], runs[1::2], strict=True) for _ in range(int(n))]
    if "d" not in encoded:
        return values
    return np.cumsum(np.asarray(values, dtype=np.int64)).tolist() if values else []
