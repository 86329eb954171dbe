"""The compact column encoding of the results tables (``attnreport.results.codec``): every
column comes back with its kind and values, and index columns shrink."""

from __future__ import annotations

import json

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from attnreport.results.codec import decode_column, decoded_column, encode_column
from attnreport.results.rounding import column_to_list
from attnreport.results.tables import BreakdownTable, TopTable, as_column


def round_trip(values: np.ndarray, kind: str) -> np.ndarray:
    encoded = json.loads(json.dumps(encode_column(column_to_list(values))))
    return as_column(decode_column(encoded), kind)


@given(st.lists(st.integers(-(2**62), 2**62), max_size=60))
def test_int_columns_round_trip(values):
    got = round_trip(np.array(values, dtype=np.int64), "int")
    assert got.dtype == np.int64 and got.tolist() == values


floats = st.one_of(
    st.sampled_from([0.0, -0.0, 1.0, -3.0, 2.5, 1e-10, 123456.0, 2.0**60]),
    st.floats(-1e6, 1e6, allow_nan=False),
)


@given(st.lists(floats, max_size=60))
def test_float_columns_round_trip_as_floats(values):
    array = np.array(values, dtype=np.float64)
    got = round_trip(array, "float")
    assert got.dtype == np.float64
    assert got.tolist() == column_to_list(array)  # the 6-digit values written, as floats
    assert not np.signbit(got[got == 0]).any()  # -0.0 is written as 0: zeros read as +0.0


@given(st.lists(st.booleans(), max_size=60))
def test_bool_columns_round_trip_as_booleans(values):
    got = round_trip(np.array(values, dtype=bool), "bool")
    assert got.dtype == np.bool_ and got.tolist() == values


@given(st.lists(st.sampled_from(["self_focus", "first_focus", " é", "<\u2028>"]), max_size=30))
def test_str_columns_round_trip(values):
    assert round_trip(np.array(values, dtype=object), "str").tolist() == values


@given(
    st.one_of(
        st.lists(floats, max_size=60).map(lambda v: np.array(v, dtype=np.float64)),
        st.lists(st.integers(-(2**62), 2**62), max_size=60).map(np.array),
        st.lists(st.booleans(), max_size=60).map(lambda v: np.array(v, dtype=bool)),
        st.lists(st.sampled_from(["a", " é"]), max_size=20).map(lambda v: np.array(v, object)),
    )
)
def test_decoded_column_is_what_a_reader_decodes_from_the_file(array):
    """The page wording reads columns without the encode/decode trip; same values, types."""
    decoded = decode_column(json.loads(json.dumps(encode_column(column_to_list(array)))))
    fast = decoded_column(array)
    assert fast == decoded
    assert [type(v) for v in fast] == [type(v) for v in decoded]


def top_table(n_layers=4, n_heads=3, n: int = 20) -> TopTable:
    rows = n_layers * n_heads * n
    rng = np.random.default_rng(0)
    p1 = rng.random(rows)
    return TopTable(
        layer=np.repeat(np.arange(n_layers), n_heads * n),
        head=np.tile(np.repeat(np.arange(n_heads), n), n_layers),
        query=np.tile(np.arange(n), n_layers * n_heads),
        top_key=rng.integers(0, n, rows),
        top_is_self=rng.random(rows) < 0.3,
        top_is_first=rng.random(rows) < 0.5,
        p_top1=p1,
        p_top2=p1 / 2,
        concentration=p1 / 2,
    )


def test_a_table_reads_back_with_its_kinds_and_values():
    table = top_table()
    back = TopTable.from_json(json.loads(json.dumps(table.to_json())), "t")
    for name, values in table.arrays().items():
        got = back.arrays()[name]
        assert got.dtype == values.dtype, name
        assert got.tolist() == column_to_list(values), name
    zeros = BreakdownTable(**{n: np.zeros(3, dtype=int if n in ("layer", "head", "query", "rank", "key") else float) for n in BreakdownTable.columns_of()})  # fmt: skip
    read = BreakdownTable.from_json(json.loads(json.dumps(zeros.to_json())), "t")
    assert read.bias.dtype == np.float64 and read.bias.tolist() == [0.0, 0.0, 0.0]


def test_index_and_constant_columns_are_much_smaller():
    table = top_table(n_layers=30, n_heads=9, n=63)
    written = table.to_json()["columns"]
    for name in ("layer", "head", "query"):
        plain = len(json.dumps(column_to_list(table.arrays()[name])))
        assert len(json.dumps(written[name])) * 10 < plain, name
    assert written["layer"] == {"r": [v for layer in range(30) for v in (layer, 9 * 63)]}
    assert written["query"]["d"][:4] == [0, 1, 1, 62]  # first 0, then 62 steps of +1
    zero = BreakdownTable(**{n: np.zeros(500) for n in BreakdownTable.columns_of()}).to_json()
    assert zero["columns"]["bias"] == {"r": [0, 500]}
    assert len(json.dumps(written["p_top1"])) == len(json.dumps(column_to_list(table.p_top1)))


def test_malformed_columns_are_refused_in_one_line():
    import pytest

    from attnreport.errors import AttnReportError

    columns = top_table(1, 1, 3).to_json()["columns"]
    for bad in ({"r": [1, 2, 3]}, {"x": [1]}, {"r": [1, 2], "d": [1, 2]}, 5):
        with pytest.raises(AttnReportError, match="column 'layer' of table top is malformed"):
            TopTable.from_json({"columns": {**columns, "layer": bad}}, "s.json")


def reference_encoding(values: list) -> object:
    """``encode_column`` written the slow, obvious way: compact each value, build the three
    forms, keep a run-length form only when it has fewer entries than the plain array, and
    take the shortest JSON (the first of plain, "r", "d" on a tie)."""

    def compact(v):
        if isinstance(v, bool):
            return int(v)
        if isinstance(v, float) and v.is_integer() and abs(v) < 2**53:
            return int(v)
        return v

    def runs(vs):
        out = []
        for v in vs:
            if out and out[-2] == v:
                out[-1] += 1
            else:
                out += [v, 1]
        return out

    plain = [compact(v) for v in values]
    forms = [plain]
    if len(runs(plain)) < len(plain):
        forms.append({"r": runs(plain)})
    if plain and all(type(v) is int for v in plain):
        deltas = [b - a for a, b in zip([0, *plain], plain, strict=False)]
        if len(runs(deltas)) < len(plain):
            forms.append({"d": runs(deltas)})
    return min(forms, key=lambda f: len(json.dumps(f, separators=(",", ":"))))


runny = st.lists(
    st.tuples(
        st.one_of(
            floats,
            st.integers(-(2**40), 2**40),
            st.booleans(),
            st.sampled_from(["a", " é", None]),
        ),
        st.integers(1, 6),
    ),
    max_size=25,
).map(lambda pairs: [v for v, n in pairs for _ in range(n)])
one_kind = st.one_of(
    st.lists(st.tuples(floats, st.integers(1, 6)), max_size=25),
    st.lists(st.tuples(st.integers(0, 3), st.integers(1, 9)), max_size=25),
).map(lambda pairs: [v for v, n in pairs for _ in range(n)])


@given(st.one_of(runny, one_kind, st.lists(st.integers(0, 500), max_size=60).map(sorted)))
def test_encoding_is_the_obvious_one(values):
    assert encode_column(values) == reference_encoding(values)
