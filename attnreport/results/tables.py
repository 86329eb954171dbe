"""Typed column tables of the results schema (``docs/results-schema.md``).

A table is a frozen dataclass whose fields are its columns, each a 1-D numpy array of
one length (int64 ids and positions, float64 statistics, bool flags, object strings).
On disk it is ``{"columns": {name: COLUMN}}``, each ``COLUMN`` in the compact encoding of
``attnreport.results.codec`` (a plain array, or run-length / delta run-length where that is
shorter); loading decodes it and restores the column's kind (a float column written as
``0`` reads as ``0.0``, a bool column written as 0/1 as booleans). Readers use the fields
(``focus.first_focus``), never dictionary keys. A column declared with a ``fill`` is
optional on load (results written before it existed get the fill value).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Self

import numpy as np

from attnreport.errors import AttnReportError
from attnreport.jsontypes import Json
from attnreport.results.codec import Encoded, decode_column, encode_column
from attnreport.results.rounding import column_to_list

_DTYPES = {"int": np.int64, "float": np.float64, "bool": np.bool_, "str": object}


def col(kind: str) -> Any:
    """A required column field of ``kind`` ("int", "float", "bool", "str")."""
    return field(metadata={"kind": kind, "fill": None})


def optional_col(kind: str, fill: Any, omitted: bool = False) -> Any:
    """A column absent from older results: ``fill`` on every row when missing. An
    ``omitted`` one is also left out of the file when every row holds ``fill``."""
    return field(default=None, metadata={"kind": kind, "fill": fill, "omitted": omitted})


def span_col() -> Any:
    """The queries a row stands for: 1 on an exact row, a bin's count on a pooled one
    (``results.pooling``; written only when some row pools)."""
    return optional_col("int", 1, omitted=True)


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
    """Base of every results table; subclasses declare their columns with ``col``."""

    NAME: ClassVar[str] = "table"

    def __post_init__(self) -> None:
        lengths = set()
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None:
                continue
            object.__setattr__(self, f.name, as_column(value, f.metadata["kind"]))
            lengths.add(len(getattr(self, f.name)))
        n = lengths.pop() if len(lengths) == 1 else 0
        if lengths:
            raise ValueError(f"columns of table {self.NAME} differ in length")
        for f in fields(self):
            if getattr(self, f.name) is None:
                filled = np.full(n, f.metadata["fill"], dtype=_DTYPES[f.metadata["kind"]])
                object.__setattr__(self, f.name, filled)

    def __len__(self) -> int:
        first = fields(self)[0].name
        return len(getattr(self, first))

    @classmethod
    def columns_of(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))

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
        meta = next(f.metadata for f in fields(self) if f.name == name)
        return bool(meta.get("omitted")) and bool(np.all(getattr(self, name) == meta["fill"]))

    @classmethod
    def from_json(cls, value: Any, where: str) -> Self:
        """Parse ``{"columns": ...}``; a missing required column is a one-line error."""
        columns = value.get("columns") if isinstance(value, dict) else None
        if not isinstance(columns, dict):
            raise AttnReportError(f"{where}: table {cls.NAME} is not a column table")
        values: dict[str, list[Any]] = {}
        for f in fields(cls):
            if f.name in columns:
                values[f.name] = _decoded(columns[f.name], f.name, where, cls.NAME)
            elif f.metadata["fill"] is None:
                raise AttnReportError(f"{where}: table {cls.NAME} lacks column {f.name!r}")
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


@_table("tokens")
class TokensTable(Table):
    position: np.ndarray = col("int")
    token: np.ndarray = col("str")  # the token's text as decoded alone
    token_id: np.ndarray = col("int")


@dataclass(frozen=True, eq=False)
class SentenceColumn(Table):
    """The leading ``sentence`` column of a set table that keeps every sentence's rows.
    A table ``T(Columns, SentenceColumn)`` has ``sentence`` first, then the columns of
    ``Columns``: dataclass fields follow the reversed method resolution order."""

    sentence: np.ndarray = col("int")


@dataclass(frozen=True, eq=False)
class HeadColumns(Table):
    """The keys of a table with one row per (layer, head)."""

    layer: np.ndarray = col("int")
    head: np.ndarray = col("int")


@dataclass(frozen=True, eq=False)
class QueryColumns(HeadColumns):
    """The keys of a table with one row per (layer, head, query)."""

    query: np.ndarray = col("int")


@_table("top")
class TopTable(QueryColumns):
    top_key: np.ndarray = col("int")
    top_is_self: np.ndarray = col("bool")
    top_is_first: np.ndarray = col("bool")
    p_top1: np.ndarray = col("float")
    p_top2: np.ndarray = col("float")
    concentration: np.ndarray = col("float")
    span: np.ndarray = span_col()


@_table("breakdown")
class BreakdownTable(QueryColumns):
    rank: np.ndarray = col("int")
    key: np.ndarray = col("int")
    score: np.ndarray = col("float")
    position: np.ndarray = col("float")
    bias: np.ndarray = col("float")
    content: np.ndarray = col("float")
    query_only: np.ndarray = col("float")
    span: np.ndarray = span_col()


@dataclass(frozen=True, eq=False)
class _FocusColumns(HeadColumns):
    """The focus statistics of one head over a sentence's queries: the columns of
    ``focus`` and, after its ``sentence`` column, of ``focus_by_sentence``."""

    self_focus: np.ndarray = col("float")
    first_focus: np.ndarray = col("float")
    concentration: np.ndarray = col("float")
    n_queries: np.ndarray = col("int")
    # first_prob: mean p_i0 over queries i >= 1 that can see token 0;
    # sink_share: mean learned-sink probability (0 without sinks)
    first_prob: np.ndarray = optional_col("float", 0.0)
    sink_share: np.ndarray = optional_col("float", 0.0)
    # queries i >= 1 that can see token 0 (the first-token measures' count); -1: not recorded
    n_first: np.ndarray = optional_col("int", -1)


@_table("focus")
class FocusTable(_FocusColumns):
    pass


@_table("focus_by_sentence")
class FocusBySentenceTable(_FocusColumns, SentenceColumn):
    """``focus`` with a leading ``sentence`` column."""


@dataclass(frozen=True, eq=False)
class _SortedColumns(Table):
    """Per focus statistic, the heads of each layer in the order of their value: the
    columns of a sentence's ``focus_sorted`` and the first ones of the set's."""

    statistic: np.ndarray = col("str")
    layer: np.ndarray = col("int")
    line: np.ndarray = col("int")
    head: np.ndarray = col("int")
    value: np.ndarray = col("float")


@_table("focus_sorted")
class FocusSortedTable(_SortedColumns):
    pass


@_table("focus_sorted")
class PooledSortedTable(_SortedColumns):
    """The set's ``focus_sorted``: the pooled value and its spread over the sentences."""

    min: np.ndarray = col("float")
    max: np.ndarray = col("float")


@_table("head_impact")
class HeadImpactTable(QueryColumns):
    magnitude: np.ndarray = col("float")
    orientation: np.ndarray = col("float")
    span: np.ndarray = span_col()


@_table("block_impact")
class BlockImpactTable(Table):
    layer: np.ndarray = col("int")
    query: np.ndarray = col("int")
    magnitude: np.ndarray = col("float")
    top_first_heads: np.ndarray = col("int")


@_table("focus_pooled")
class FocusPooledTable(HeadColumns):
    statistic: np.ndarray = col("str")
    value: np.ndarray = col("float")
    min: np.ndarray = col("float")
    q1: np.ndarray = col("float")
    median: np.ndarray = col("float")
    q3: np.ndarray = col("float")
    max: np.ndarray = col("float")
    n_sentences: np.ndarray = col("int")


@_table("bos_contrast")
class BosContrastTable(HeadColumns, SentenceColumn):
    """The sentences captured again with the tokenizer's BOS first (schema 5; only when
    the run added none): per head, the share of queries whose top key is the BOS."""

    first_focus: np.ndarray = col("float")
    n_queries: np.ndarray = col("int")


@_table("value_norms")
class ValueNormsTable(SentenceColumn):
    """Per sentence, layer and kv head: ‖v_0‖ and the mean ‖v_j‖ over j >= 1 (schema 5)."""

    layer: np.ndarray = col("int")
    kv_head: np.ndarray = col("int")
    first_norm: np.ndarray = col("float")
    other_norm: np.ndarray = col("float")


@_table("impact_pooled")
class ImpactPooledTable(HeadColumns):
    magnitude: np.ndarray = col("float")
    orientation: np.ndarray = col("float")
    n_tokens: np.ndarray = col("int")


@dataclass(frozen=True, eq=False)
class PooledTable(Table):
    """A ``set.json`` table pooled over the corpus from the sentence table named ``POOLS``
    (a field of ``SentenceTables``), with no pooling code of its own (``corpus.pooled``):
    one row per distinct ``KEYS`` value; each other column but ``n_rows`` is the mean of
    the source column of the same name over every row with those keys in every sentence
    (exact sums, rounded once, so any split of the corpus gives the same value);
    ``n_rows`` (declared by the subclass, an int column) counts those rows."""

    POOLS: ClassVar[str] = ""
    KEYS: ClassVar[tuple[str, ...]] = ("layer", "head")

    @classmethod
    def means_of(cls) -> tuple[str, ...]:
        """The columns that are means of the source's columns (not keys, not ``n_rows``)."""
        return tuple(c for c in cls.columns_of() if c not in cls.KEYS and c != "n_rows")


@dataclass(frozen=True, eq=False)
class LazyColumn:
    """A table column whose JSON value (rounded, then encoded) is made when written."""

    values: np.ndarray

    def encoded(self) -> Encoded:
        return encode_column(column_to_list(self.values))
