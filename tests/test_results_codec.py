"""The compact column encoding of the results tables (``attnreport.results.codec``): every
column comes back with its kind and values, and index columns shrink; the site's packed
form (``attnreport.results.packed``) gives back the plain values to the bit."""

from __future__ import annotations

import base64
import json
import math

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from attnreport.results.codec import _compacted, decode_column, decoded_column, encode_column
from attnreport.results.columns import as_column
from attnreport.results.packed import packed_column
from attnreport.results.rounding import column_to_list
from attnreport.results.tables import BreakdownTable, TopTable


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


# The packed form {"b": [d, w, BASE64], "x": [...]}: the site's data only (binary=True).


def _fits_numpy(plain: list) -> bool:
    """Whether the column is one numpy array without loss: an int column in int64, a
    column mixing ints and floats in float64 (which holds ints exactly below 2**53)."""
    if all(type(v) is int for v in plain):
        return all(-(2**63) <= v < 2**63 for v in plain)
    return not any(type(v) is int and abs(v) >= 2**53 for v in plain)


def packed_reference(values: list) -> object:
    """``encode_column(values, binary=True)`` written the slow, obvious way: for every d in
    0..6 (0 only for an int column) and width w, a value is held when q = round(v * 10**d)
    gives v back as q / 10**d and |q| < 2**(8w - 1) (the others are exceptions); the first
    shortest packed form is taken when strictly shorter than the readable encoding."""
    readable = reference_encoding(values)
    plain = [int(v) if isinstance(v, bool) else v for v in reference_encoding_plain(values)]
    numeric = all(type(v) in (int, float) for v in plain)
    if not plain or not numeric or not _fits_numpy(plain):
        return readable
    best = None
    for d in range(1 if all(type(v) is int for v in plain) else 7):
        for w in (1, 2, 4):
            ints, extra = [], []
            for i, v in enumerate(plain):
                q = round(v * 10**d) if abs(v) < 2**40 else None
                held = q is not None and abs(q) < 2 ** (8 * w - 1) and (q / 10**d == v)
                ints.append(q if held else 0)
                extra += [] if held else [i, v]
            data = b"".join(q.to_bytes(w, "little", signed=True) for q in ints)
            form = {"b": [d, w, base64.b64encode(data).decode()]}
            form.update({"x": extra} if extra else {})
            if best is None or size_of(form) < size_of(best):
                best = form
    return best if size_of(best) < size_of(readable) else readable


def reference_encoding_plain(values: list) -> list:
    return [int(v) if isinstance(v, float) and v.is_integer() and abs(v) < 2**53 else v for v in values]  # fmt: skip


def size_of(form: object) -> int:
    return len(json.dumps(form, separators=(",", ":")))


def with_decimals(bound: int) -> st.SearchStrategy[list[float]]:
    """Columns of q / 10**d for one d in 0..6 and |q| <= bound."""
    return st.integers(0, 6).flatmap(
        lambda d: st.lists(st.integers(-bound, bound).map(lambda q: q / 10**d), max_size=40)
    )


odd_values = st.one_of(
    st.floats(-20, 20, allow_nan=False).map(lambda v: float(f"{v:.6g}")),  # 6 significant
    st.sampled_from([-0.0, 0.0, 1e-7, -3.5e-05, 1e-4, 2.0**60, 123456789.125, 1e22]),
    st.integers(-(2**62), 2**62),  # beyond int32: never packed
    st.floats(allow_nan=False, allow_infinity=False),
)
packable = st.one_of(
    with_decimals(100),  # int8 at their decimals
    with_decimals(30_000),  # int16
    with_decimals(2**31 - 1),  # int32
    st.tuples(with_decimals(30_000), st.lists(odd_values, max_size=4), st.randoms()).map(
        lambda t: t[2].sample(t[0] + t[1], len(t[0]) + len(t[1]))  # exceptions anywhere
    ),
    st.lists(st.integers(-(2**40), 2**40), max_size=30),
    st.lists(odd_values, max_size=5),
)


@given(packable)
def test_packed_columns_decode_to_the_plain_values_and_types(values):
    plain = decode_column(json.loads(json.dumps(encode_column(values))))
    packed = json.loads(json.dumps(encode_column(values, binary=True)))
    back = decode_column(packed)
    assert back == plain
    assert [type(v) for v in back] == [type(v) for v in plain]
    assert [math.copysign(1, v) for v in back] == [math.copysign(1, v) for v in plain]


@given(st.one_of(packable, runny, one_kind))
@example([-100.0, -1000.0, -10.0, 2**53])  # integral floats make an int column: int64 holds 2**53
@example([2**63, 5])  # past int64: written plain
def test_packed_encoding_is_the_obvious_one(values):
    assert encode_column(values, binary=True) == packed_reference(values)


@given(packable)
def test_packed_sizes_are_counted_right(values):
    """The packed form is chosen by sizes counted with numpy: they are the JSON lengths."""
    plain, kinds, array = _compacted(values)
    found = packed_column(plain, kinds, array)
    if found is None:  # empty, or ints a float64 would round among floats
        assert not plain or array.dtype == object
        return
    form, size, plain_size = found
    assert size == size_of(form) and plain_size == size_of(plain)


def test_a_score_column_packs_to_less_than_half():
    rng = np.random.default_rng(0)
    scores = np.round(rng.normal(2, 3, 10_000), 3)
    scores[rng.integers(0, 10_000, 30)] = 12.3457  # 6 significant digits: exceptions
    values = scores.tolist()
    packed = encode_column(values, binary=True)
    assert packed["b"][:2] == [3, 2] and len(packed["x"]) >= 2
    assert size_of(packed) * 2 < size_of(encode_column(values))
    assert decode_column(packed) == decode_column(encode_column(values))
    probs = np.round(rng.random(10_000), 4).tolist()  # 4 decimals, 0..1: int16 too
    assert size_of(encode_column(probs, binary=True)) * 2 < size_of(probs)


def test_results_files_never_pack():
    table = top_table(n_layers=8, n_heads=4, n=40)
    written = table.to_json()["columns"]
    assert not any(isinstance(c, dict) and "b" in c for c in written.values())
    assert set(written) == set(table.arrays()) - {"span"}  # no row pools: no span written
    for name in written:
        assert written[name] == reference_encoding(column_to_list(table.arrays()[name])), name
    p_top1 = column_to_list(table.p_top1)  # the same column on the site packs
    assert "b" in encode_column(p_top1, binary=True) and "b" not in encode_column(p_top1)


def test_malformed_packed_columns_are_refused_in_one_line():
    good = {"b": [2, 2, base64.b64encode(b"\x01\x00\x02\x00").decode()], "x": [1, 0.125]}
    assert decode_column(good) == [0.01, 0.125]
    bad = {
        "width": {"b": [2, 3, "AAAA"]},
        "decimals": {"b": [23, 1, "AA=="]},
        "base64": {"b": [0, 1, "A$=="]},
        "padding": {"b": [0, 1, "AAA"]},
        "length": {"b": [0, 2, "AAAA"]},  # 3 bytes
        "not a string": {"b": [0, 1, 5]},
        "short": {"b": [0, 1]},
        "odd exceptions": {"b": [0, 1, "AA=="], "x": [0]},
        "index": {"b": [0, 1, "AA=="], "x": [1, 2]},
        "negative index": {"b": [0, 1, "AA=="], "x": [-1, 2]},
        "value": {"b": [0, 1, "AA=="], "x": [0, "2"]},
        "keys": {"b": [0, 1, "AA=="], "r": [1, 1]},
    }
    for name, form in bad.items():
        with pytest.raises(ValueError) as caught:
            decode_column(form)
        assert "\n" not in str(caught.value), name


numpy_columns = st.one_of(
    st.one_of(packable, one_kind)
    .filter(lambda v: all(type(x) is float for x in v))
    .map(lambda v: np.array(v, dtype=np.float64)),
    st.lists(st.sampled_from([0.0, -0.0, 1.5, math.nan, math.inf, 2.0**60]), max_size=12).map(
        lambda v: np.array(v, dtype=np.float64)
    ),
    st.lists(st.tuples(st.integers(-(2**40), 2**40), st.integers(1, 6)), max_size=25).map(
        lambda pairs: np.array([v for v, n in pairs for _ in range(n)], dtype=np.int64)
    ),
    st.lists(st.integers(0, 500), max_size=60).map(lambda v: np.array(sorted(v), np.int32)),
    st.lists(st.booleans(), max_size=30).map(lambda v: np.array(v, dtype=bool)),
)


@given(numpy_columns, st.booleans())
@example(np.array([3, 3, 3, 4, 4], dtype=np.int64), True)
@example(np.array([0.0, 1.0, 2.0, 0.5], dtype=np.float64), False)
def test_a_numpy_column_encodes_as_its_list_does(array, binary):
    """The map parts hand their columns over as numpy arrays (no Python list is built
    unless the plain form is chosen): every form, bytes included, is the list's."""
    mine, theirs = encode_column(array, binary=binary), encode_column(array.tolist(), binary=binary)
    assert json.dumps(mine) == json.dumps(theirs)  # (NaN written as NaN on both sides)
