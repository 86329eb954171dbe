"""A results file's tables are named once, by the fields of its typed value: the parser,
the writer and the page wording all read that one list (``types.table_kinds``)."""

from __future__ import annotations

from dataclasses import dataclass, fields

import pytest

from attnreport.errors import AttnReportError
from attnreport.results import types
from attnreport.results.columns import Int, Table, _table
from attnreport.results.tables import FocusTable
from tests.fixtures.fake_results import fake_study, typed


@_table("toy_counts")
class ToyCountsTable(Table):
    layer: Int
    count: Int


@dataclass(frozen=True, eq=False)
class ToyFile:
    focus: FocusTable
    note: str
    toy_counts: ToyCountsTable | None = None


def test_a_files_tables_are_its_table_fields_in_order_optional_when_defaulting_to_none():
    assert types.table_kinds(ToyFile) == {"focus": FocusTable, "toy_counts": ToyCountsTable}
    assert types.optional_tables(ToyFile) == {"toy_counts"}
    sentence_fields = [f.name for f in fields(types.SentenceTables)]
    assert list(types.table_kinds(types.SentenceTables)) == sentence_fields
    set_fields = [f.name for f in fields(types.SetResults) if f.name != "probes"]
    assert list(types.table_kinds(types.SetResults)) == set_fields


def test_written_and_read_tables_follow_the_fields():
    results = typed(fake_study(2))
    written = types.set_to_json(results.set)
    assert list(written["tables"]) == list(types.set_tables(results.set))
    back = types.set_from_json(written)
    assert list(types.set_tables(back)) == list(types.set_tables(results.set))
    sentence = results.sentences[0]
    as_json = types.sentence_to_json(sentence)
    assert list(as_json["tables"]) == list(types.sentence_tables(sentence))
    optional = types.optional_tables(types.SentenceTables)
    assert optional == {"head_roles", "massive_activations"}
    older = {**as_json, "tables": {k: v for k, v in as_json["tables"].items() if k not in optional}}
    older["attention"] = sentence.attention.to_json()  # an older folder's: scores inline
    read = types.sentence_from_json(older, "s.json").tables  # as an older folder has it
    assert all(getattr(read, name) is None for name in optional)
    without_focus = {**older, "tables": {k: v for k, v in older["tables"].items() if k != "focus"}}
    with pytest.raises(AttnReportError, match="s.json.*focus"):
        types.sentence_from_json(without_focus, "s.json")
