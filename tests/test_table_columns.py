"""A table's columns are declared once, by annotation: ``layer: Int``. Shared column
groups are base classes, and a table's columns keep the order the schema documents."""

from __future__ import annotations

import numpy as np
import pytest

from attnreport.results.columns import Column, Float, Int, Table, _table, optional_col
from attnreport.results.roles import HeadRolesBySentenceTable, HeadRolesTable
from attnreport.results.tables import FocusBySentenceTable, FocusTable, HeadColumns, SentenceColumn


@_table("toy_scores")
class ToyScoresTable(HeadColumns, SentenceColumn):
    score: Float
    count: Int = optional_col(-1)


def test_columns_carry_their_kind_and_fill_in_order():
    assert ToyScoresTable.columns() == (
        Column("sentence", "int"),
        Column("layer", "int"),
        Column("head", "int"),
        Column("score", "float"),
        Column("count", "int", fill=-1),
    )
    table = ToyScoresTable(sentence=[0, 1], layer=[2, 2], head=[0, 1], score=[1, 0])
    assert table.score.dtype == np.float64 and table.layer.dtype == np.int64
    assert table.count.tolist() == [-1, -1]  # the optional column's fill, typed int
    back = ToyScoresTable.from_json(table.to_json(), "toy")
    assert back.score.tolist() == [1.0, 0.0] and back.score.dtype == np.float64


def test_a_by_sentence_table_is_its_sentence_column_then_the_sentence_tables():
    for one, by_sentence in (
        (FocusTable, FocusBySentenceTable),
        (HeadRolesTable, HeadRolesBySentenceTable),
    ):
        assert by_sentence.columns() == (Column("sentence", "int"), *one.columns())


def test_a_column_without_a_kind_is_a_declaration_error():
    @_table("unkinded")
    class Unkinded(Table):
        layer: np.ndarray

    with pytest.raises(TypeError, match="column layer of table unkinded"):
        Unkinded.columns()
