"""How a results table is declared, checked, written and read (the tables themselves:
``attnreport.results.tables`` and ``attnreport.results.roles``).

A table is a frozen dataclass whose fields are its columns, each a 1-D numpy array of
one length, its kind in its annotation: ``Int`` (int64 ids and positions), ``Float``
(float64 statistics), ``Bool`` (flags) or ``Str`` (object strings). On disk it is
``{"columns": {name: COLUMN}}``, each ``COLUMN`` in the compact encoding of
``attnreport.results.codec`` (a plain array, or run-length / delta run-length where that
is shorter); loading decodes it and restores the column's kind (a float column written
as ``0`` reads as ``0.0``, a bool column written as 0/1 as booleans). Readers use the
fields (``focus.first_focus``), never dictionary keys. A column declared
``optional_col(fill)`` is optional on load (results written before it existed get the
fill value).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from functools import cache
from typing import Annotated, Any, ClassVar, Self, get_type_hints

import numpy as np

from attnreport.errors import AttnReportError
from attnreport.jsontypes import Json
from attnreport.results.codec import Encoded, decode_column, encode_column
from attnreport.results.rounding import column_to_list

_DTYPES = {"int": np.int64, "float": np.float64, "bool": np.bool_, "str": object}


@dataclass(frozen=True)
class Kind:
    """A column's kind ("int", "float", "bool", "str"), carried by its annotation."""

    name: str


# A column is a field annotated with its kind: ``layer: Int``.
Int = Annotated[np.ndarray, Kind("int")]  # int64 ids, positions and counts
Float = Annotated[np.ndarray, Kind("float")]  # float64 statistics
Bool = Annotated[np.ndarray, Kind("bool")]  # flags
Str = Annotated[np.ndarray, Kind("str")]  # exact Python strings (object arrays)


def optional_col(fill: Any, omitted: bool = False) -> Any:
    """A column absent from older results: ``fill`` on every row when missing. An
    ``omitted`` one is also left out of the file when every row holds ``fill``."""
    return field(default=None, metadata={"fill": fill, "omitted": omitted})


def span_col() -> Any:
    """The queries a row stands for (an ``Int`` column): 1 on an exact row, a bin's count
    on a pooled one (``results.pooling``; written only when some row pools)."""
    return optional_col(1, omitted=True)


@dataclass(frozen=True)
class Column:
    """One column of a table class: its kind, and for an optional one its fill (None:
    required) and whether a column holding only its fill is left out of the file."""

    name: str
    kind: str
    fill: Any = None
    omitted: bool = False


def _kind(hint: Any) -> str | None:
    """The kind an ``Int``, ``Float``, ``Bool`` or ``Str`` annotation carries (None: none)."""
    return next((m.name for m in getattr(hint, "__metadata__", ()) if isinstance(m, Kind)), None)


def as_column(values: Any, kind: str) -> np.ndarray:
    """``values`` as a 1-D array of the column's dtype (strings stay exact Python str)."""
    if kind == "str":
        out = np.empty(len(values), dtype=object)
        out[:] = [str(v) for v in values]
        return out
    array = np.asarray(values, dtype=_DTYPES[kind])
    return array.reshape(-1) if array.ndim != 1 else array


@dataclass(frozen=True, eq=False)
class Table:
    """Base of every results table; subclasses declare their columns as fields annotated
    ``Int``, ``Float``, ``Bool`` or ``Str`` (``optional_col`` for an optional one)."""

    NAME: ClassVar[str] = "table"

    @classmethod
    @cache
    def columns(cls) -> tuple[Column, ...]:
        """The table's columns in their order (the file's), each with its kind."""
        hints = get_type_hints(cls, include_extras=True)
        out = []
        for f in fields(cls):
            kind = _kind(hints[f.name])
            if kind is None:
                msg = (
                    f"column {f.name} of table {cls.NAME} is not annotated Int, Float, Bool or Str"
                )
                raise TypeError(msg)
            out.append(
                Column(f.name, kind, f.metadata.get("fill"), f.metadata.get("omitted", False))
            )
        return tuple(out)

    def __post_init__(self) -> None:
        lengths = set()
        for c in self.columns():
            value = getattr(self, c.name)
            if value is None:
                continue
            object.__setattr__(self, c.name, as_column(value, c.kind))
            lengths.add(len(getattr(self, c.name)))
        n = lengths.pop() if len(lengths) == 1 else 0
        if lengths:
            raise ValueError(f"columns of table {self.NAME} differ in length")
        for c in self.columns():
            if getattr(self, c.name) is None:
                object.__setattr__(self, c.name, np.full(n, c.fill, dtype=_DTYPES[c.kind]))

    def __len__(self) -> int:
        first = fields(self)[0].name
        return len(getattr(self, first))

    @classmethod
    def columns_of(cls) -> tuple[str, ...]:
        return tuple(c.name for c in cls.columns())

    def arrays(self) -> dict[str, np.ndarray]:
        """Column name -> array (the names are the charts' field names)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def to_json(self, lazy: bool = False) -> Json:
        """``{"columns": {...}}``, floats rounded to 6 significant digits, each column
        encoded (``codec.encode_column``); with ``lazy`` each column is a ``LazyColumn``,
        converted only when ``io.dump_json_streamed`` writes it (a long sentence's tables
        as Python lists would be several GB)."""
        columns = {
            name: LazyColumn(v) for name, v in self.arrays().items() if not self._left_out(name)
        }
        if lazy:
            return {"columns": columns}
        return {"columns": {name: c.encoded() for name, c in columns.items()}}

    def _left_out(self, name: str) -> bool:
        """An ``omitted`` optional column whose every row holds its fill."""
        column = next(c for c in self.columns() if c.name == name)
        return column.omitted and bool(np.all(getattr(self, name) == column.fill))

    @classmethod
    def from_json(cls, value: Any, where: str) -> Self:
        """Parse ``{"columns": ...}``; a missing required column is a one-line error."""
        columns = value.get("columns") if isinstance(value, dict) else None
        if not isinstance(columns, dict):
            raise AttnReportError(f"{where}: table {cls.NAME} is not a column table")
        values: dict[str, list[Any]] = {}
        for c in cls.columns():
            if c.name in columns:
                values[c.name] = _decoded(columns[c.name], c.name, where, cls.NAME)
            elif c.fill is None:
                raise AttnReportError(f"{where}: table {cls.NAME} lacks column {c.name!r}")
        try:
            return cls(**values)
        except (ValueError, TypeError) as err:
            raise AttnReportError(f"{where}: table {cls.NAME} is malformed ({err})") from err


def _decoded(encoded: Any, name: str, where: str, table: str) -> list[Any]:
    try:
        return decode_column(encoded)
    except (ValueError, TypeError) as err:
        msg = f"{where}: column {name!r} of table {table} is malformed ({err})"
        raise AttnReportError(msg) from err


def _table(name: str) -> Any:
    def wrap(cls: type) -> type:
        cls.NAME = name
        return dataclass(frozen=True, eq=False)(cls)

    return wrap


@dataclass(frozen=True, eq=False)
class LazyColumn:
    """A table column whose JSON value (rounded, then encoded) is made when written."""

    values: np.ndarray

    def encoded(self) -> Encoded:
        return encode_column(column_to_list(self.values))
