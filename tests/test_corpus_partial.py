"""Set-wide statistics merged from per-sentence partial sums (attnreport.corpus.partial).

Any split of a corpus, merged in any order, gives bit-identical tables; and those equal
the one-pass pooling of ``tests/pooling_reference.py`` (an independent computation) to
float rounding.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnreport.corpus.partial import SentencePartial, SetPartial
from tests.pooling_reference import pool_focus, pool_impact

LAYERS, HEADS = 2, 3


def fake_sentence(rng: np.random.Generator, n_tokens: int) -> tuple[dict, dict]:
    """A focus and a head_impact table as a sentence of ``n_tokens`` tokens would give."""
    rows = LAYERS * HEADS
    n_queries = n_tokens - 1
    counts = rng.integers(0, n_queries + 1, size=(2, rows)) if n_queries else np.zeros((2, rows))
    focus = {
        "layer": np.repeat(np.arange(LAYERS), HEADS),
        "head": np.tile(np.arange(HEADS), LAYERS),
        "self_focus": counts[0] / max(n_queries, 1),
        "first_focus": counts[1] / max(n_queries, 1),
        "concentration": rng.random(rows) if n_queries else np.zeros(rows),
        "n_queries": np.full(rows, n_queries, dtype=np.int64),
        "first_prob": rng.random(rows) if n_queries else np.zeros(rows),
        "sink_share": rng.random(rows) * 0.1,
    }
    impact = {
        "layer": np.repeat(np.arange(LAYERS), HEADS * n_tokens),
        "head": np.tile(np.repeat(np.arange(HEADS), n_tokens), LAYERS),
        "query": np.tile(np.arange(n_tokens), LAYERS * HEADS),
        "magnitude": rng.random(rows * n_tokens) * 10,
        "orientation": rng.random(rows * n_tokens) * 2 - 1,
    }
    return focus, impact


def corpus(seed: int, lengths: list[int]):
    rng = np.random.default_rng(seed)
    return [fake_sentence(rng, n) for n in lengths]


def merged(tables, groups: list[list[int]]) -> dict:
    """Merge each group into its own SetPartial, then merge the parts in the given order."""
    parts = []
    for group in groups:
        part = SetPartial()
        for index in group:
            part.add(SentencePartial.of(index, *tables[index]))
        parts.append(part)
    total = SetPartial()
    for part in parts:
        total.merge(part)
    return total.tables()


def assert_tables_equal(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for name in a:
        assert a[name].keys() == b[name].keys(), name
        for column in a[name]:
            assert np.array_equal(a[name][column], b[name][column]), (name, column)


@st.composite
def split_corpus(draw):
    lengths = draw(st.lists(st.integers(1, 9), min_size=1, max_size=12))
    order = draw(st.permutations(range(len(lengths))))
    cuts = sorted(draw(st.sets(st.integers(1, max(len(lengths) - 1, 1)), max_size=4)))
    groups = [
        list(order[a:b]) for a, b in zip([0, *cuts], [*cuts, len(order)], strict=True) if a < b
    ]
    return draw(st.integers(0, 2**16)), lengths, groups


@settings(max_examples=40, deadline=None)
@given(split_corpus())
def test_any_split_merges_to_the_one_pass_numbers(case):
    seed, lengths, groups = case
    tables = corpus(seed, lengths)
    one_pass = merged(tables, [list(range(len(lengths)))])
    assert_tables_equal(merged(tables, groups), one_pass)
    by_sentence, pooled, pooled_sorted = pool_focus([t[0] for t in tables])
    reference = {
        "focus_by_sentence": by_sentence,
        "focus_pooled": pooled,
        "focus_sorted": pooled_sorted,
        "impact_pooled": pool_impact([t[1] for t in tables]),
    }
    for name, table in reference.items():
        for column, values in table.items():
            got = one_pass[name][column]
            if values.dtype.kind == "f":
                np.testing.assert_allclose(got, values, rtol=1e-12, atol=1e-15)
            else:
                assert np.array_equal(got, values), (name, column)


def test_pooled_value_is_counts_over_all_queries_not_a_mean_of_means():
    long, short = corpus(1, [11, 2])
    long[0]["first_focus"][:] = 1.0  # 10 queries, all on the first token
    short[0]["first_focus"][:] = 0.0  # 1 query, elsewhere
    tables = merged([long, short], [[0], [1]])
    rows = tables["focus_pooled"]["statistic"] == "first_focus"
    assert np.allclose(tables["focus_pooled"]["value"][rows], 10 / 11)
    assert np.allclose(tables["focus_pooled"]["median"][rows], 0.5)  # across sentences


def test_first_token_focus_pools_over_the_queries_that_can_see_token_0():
    """A windowed layer: sentence A has 9 queries of which 3 see token 0 (1 hit there),
    sentence B 2 queries that both see it (2 hits). Pooled first-token focus is
    (1 + 2) / (3 + 2), not the n_queries-weighted (1/3 * 9 + 2) / 11; self focus keeps
    n_queries as its weight. Both the one-pass pooling and the partial sums agree."""
    a, b = corpus(3, [10, 3])
    a[0].update(first_focus=np.full(6, 1 / 3), self_focus=np.full(6, 1 / 9))
    b[0].update(first_focus=np.full(6, 1.0), self_focus=np.full(6, 1.0))
    a[0]["n_first"] = np.full(6, 3, dtype=np.int64)
    b[0]["n_first"] = np.full(6, 2, dtype=np.int64)
    expected = {"first_focus": 3 / 5, "self_focus": 3 / 11}
    for pooled in (pool_focus([a[0], b[0]])[1], merged([a, b], [[1], [0]])["focus_pooled"]):
        for statistic, value in expected.items():
            rows = pooled["statistic"] == statistic
            np.testing.assert_allclose(pooled["value"][rows], value, rtol=1e-15)
    by_sentence = merged([a, b], [[0, 1]])["focus_by_sentence"]
    assert by_sentence["n_first"].tolist() == [3] * 6 + [2] * 6


def test_tables_without_n_first_pool_by_n_queries():
    """Results written before ``n_first`` existed carry -1 there: weight n_queries."""
    a, b = corpus(4, [10, 3])
    with_unknown = [dict(t[0], n_first=np.full(6, -1)) for t in (a, b)]
    for statistic in ("first_focus", "self_focus"):
        rows = pool_focus(with_unknown)[1]["statistic"] == statistic
        reference = pool_focus([a[0], b[0]])[1]
        np.testing.assert_array_equal(
            pool_focus(with_unknown)[1]["value"][rows], reference["value"][rows]
        )


def test_a_sentence_is_never_counted_twice():
    tables = corpus(2, [4, 5])
    total = SetPartial()
    total.add(SentencePartial.of(0, *tables[0]))
    with pytest.raises(ValueError, match="sentence 0 is counted twice"):
        total.add(SentencePartial.of(0, *tables[1]))


def test_partials_round_trip_through_json_exactly():
    focus, impact = corpus(3, [7])[0]
    part = SentencePartial.of(5, focus, impact)
    import json

    again = SentencePartial.from_json(json.loads(json.dumps(part.to_json())))
    assert again.index == 5
    for name in ("focus", "impact"):
        for column, values in getattr(part, name).items():
            assert np.array_equal(getattr(again, name)[column], values)
