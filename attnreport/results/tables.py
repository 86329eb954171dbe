"""The typed column tables of the results schema (``docs/results-schema.md``).

Each is a ``columns.Table``: a frozen dataclass whose fields are its columns, each
annotated with its kind (``Int``, ``Float``, ``Bool``, ``Str``). Columns shared by several
tables are declared once, in a base class: ``HeadColumns`` (the (layer, head) keys),
``QueryColumns`` (with the query), ``SentenceColumn`` (a set table's leading sentence).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from attnreport.results.columns import (
    Bool,
    Float,
    Int,
    Str,
    Table,
    _table,
    optional_col,
    span_col,
)


@_table("tokens")
class TokensTable(Table):
    position: Int
    token: Str  # the token's text as decoded alone
    token_id: Int


@dataclass(frozen=True, eq=False)
class SentenceColumn(Table):
    """The leading ``sentence`` column of a set table that keeps every sentence's rows.
    A table ``T(Columns, SentenceColumn)`` has ``sentence`` first, then the columns of
    ``Columns``: dataclass fields follow the reversed method resolution order."""

    sentence: Int


@dataclass(frozen=True, eq=False)
class HeadColumns(Table):
    """The keys of a table with one row per (layer, head)."""

    layer: Int
    head: Int


@dataclass(frozen=True, eq=False)
class QueryColumns(HeadColumns):
    """The keys of a table with one row per (layer, head, query)."""

    query: Int


@_table("top")
class TopTable(QueryColumns):
    top_key: Int
    top_is_self: Bool
    top_is_first: Bool
    p_top1: Float
    p_top2: Float
    concentration: Float
    span: Int = span_col()


@_table("breakdown")
class BreakdownTable(QueryColumns):
    rank: Int
    key: Int
    score: Float
    position: Float
    bias: Float
    content: Float
    query_only: Float
    span: Int = span_col()


@dataclass(frozen=True, eq=False)
class _FocusColumns(HeadColumns):
    """The focus statistics of one head over a sentence's queries: the columns of
    ``focus`` and, after its ``sentence`` column, of ``focus_by_sentence``."""

    self_focus: Float
    first_focus: Float
    concentration: Float
    n_queries: Int
    # first_prob: mean p_i0 over queries i >= 1 that can see token 0;
    # sink_share: mean learned-sink probability (0 without sinks)
    first_prob: Float = optional_col(0.0)
    sink_share: Float = optional_col(0.0)
    # queries i >= 1 that can see token 0 (the first-token measures' count); -1: not recorded
    n_first: Int = optional_col(-1)
    # median ||u_i|| / ||x_i|| over the queries i >= 1 whose top key is token 0, and over
    # the others (``analyses.split_updates``; 0: no such query; -1: not recorded, before 9)
    first_update: Float = optional_col(-1.0)
    other_update: Float = optional_col(-1.0)


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

    statistic: Str
    layer: Int
    line: Int
    head: Int
    value: Float


@_table("focus_sorted")
class FocusSortedTable(_SortedColumns):
    pass


@_table("focus_sorted")
class PooledSortedTable(_SortedColumns):
    """The set's ``focus_sorted``: the pooled value and its spread over the sentences."""

    min: Float
    max: Float


@_table("head_impact")
class HeadImpactTable(QueryColumns):
    magnitude: Float
    orientation: Float
    span: Int = span_col()


@_table("block_impact")
class BlockImpactTable(Table):
    layer: Int
    query: Int
    magnitude: Float
    top_first_heads: Int


@_table("focus_pooled")
class FocusPooledTable(HeadColumns):
    statistic: Str
    value: Float
    min: Float
    q1: Float
    median: Float
    q3: Float
    max: Float
    n_sentences: Int


@_table("bos_contrast")
class BosContrastTable(HeadColumns, SentenceColumn):
    """The sentences captured again in the other BOS condition (``attnreport.bos_contrast``):
    per head, the share of queries whose top key is token 0 and (schema 9) the mean
    probability it gets over the queries that can see it, their count, and ``bos``: whether
    this pass had the BOS first (before 9 a contrast ran only with it, so the fill is True;
    the probabilities read -1, not recorded)."""

    first_focus: Float
    n_queries: Int
    first_prob: Float = optional_col(-1.0)
    n_first: Int = optional_col(-1)
    bos: Bool = optional_col(True)


@_table("value_norms")
class ValueNormsTable(SentenceColumn):
    """Per sentence, layer and kv head: ‖v_0‖ and the mean ‖v_j‖ over j >= 1 (schema 5)."""

    layer: Int
    kv_head: Int
    first_norm: Float
    other_norm: Float


@_table("impact_pooled")
class ImpactPooledTable(HeadColumns):
    magnitude: Float
    orientation: Float
    n_tokens: Int


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
