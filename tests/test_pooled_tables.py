"""Issue 28, weight that grows gently: past ``map_tokens`` queries a sentence's per-query
tables are stored as the bins the figures draw, checked against a plain Python pooling;
the statistics over every query are unchanged; a short sentence's file is as before."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from statistics import fmean

import numpy as np
import pytest
import torch

from attnreport import study
from attnreport.config import Settings
from attnreport.results import tables as rt
from attnreport.results.pooling import POOL_WIDTH, bin_starts, pool_table, pooled_caption
from attnreport.sentence_pass import analyze_pass
from attnreport.session import open_session
from tests.tiny_models import story

MAP_TOKENS = 8
FLOAT_TOL = 1e-12  # means of the same float64 values, summed in another order


def reference_pool(columns: dict, groups: tuple[str, ...], map_tokens: int, width: int) -> dict:
    """(group values..., bin start) -> {column: pooled value, "span": count}, by a loop."""
    bins: dict[tuple, list[int]] = defaultdict(list)
    for i, q in enumerate(columns["query"].tolist()):
        start = q if q < map_tokens else map_tokens + (q - map_tokens) // width * width
        bins[(*(int(columns[g][i]) for g in groups), start)].append(i)
    out = {}
    for key, rows in bins.items():
        pooled = {"span": len(rows)}
        for name, values in columns.items():
            if name in (*groups, "query", "span"):
                continue
            picked = [values[i].item() for i in rows]
            if values.dtype == np.bool_:
                pooled[name] = sum(picked) > len(picked) / 2
            elif values.dtype.kind == "f":
                pooled[name] = fmean(picked)
            else:  # most frequent, lowest on a tie
                counts = Counter(picked)
                pooled[name] = min(counts, key=lambda v: (-counts[v], v))
        out[key] = pooled
    return out


def as_dict(table: rt.Table, groups: tuple[str, ...]) -> dict:
    cols = table.arrays()
    out = {}
    for i in range(len(table)):
        key = (*(int(cols[g][i]) for g in groups), int(cols["query"][i]))
        out[key] = {n: v[i].item() for n, v in cols.items() if n not in (*groups, "query")}
    return out


def assert_same_rows(got: dict, expected: dict) -> None:
    assert got.keys() == expected.keys()
    for key, row in expected.items():
        for name, value in row.items():
            if isinstance(value, float):
                assert abs(got[key][name] - value) <= FLOAT_TOL, (key, name)
            else:
                assert got[key][name] == value, (key, name)


def random_breakdown(rng, n_queries: int) -> rt.BreakdownTable:
    layer, head, query, rank = np.meshgrid(
        np.arange(2), np.arange(3), np.arange(n_queries), np.arange(2), indexing="ij"
    )
    n = layer.size
    floats = {name: rng.normal(size=n) for name in ("position", "bias", "content", "query_only")}
    return rt.BreakdownTable(
        layer=layer.ravel(),
        head=head.ravel(),
        query=query.ravel(),
        rank=rank.ravel(),
        key=rng.integers(0, 4, size=n),
        score=sum(floats.values()),
        **floats,
    )


def test_bins_start_at_map_tokens_and_step_by_the_width():
    got = bin_starts(np.arange(20), 8, 5)
    assert got.tolist() == [*range(8), 8, 8, 8, 8, 8, 13, 13, 13, 13, 13, 18, 18]


@pytest.mark.parametrize("n_queries", [8, 9, 30, 45])
def test_pooled_breakdown_equals_a_plain_pooling(n_queries):
    table = random_breakdown(np.random.default_rng(n_queries), n_queries)
    groups = ("layer", "head", "rank")
    pooled = pool_table(table, MAP_TOKENS, 5)
    assert_same_rows(as_dict(pooled, groups), reference_pool(table.arrays(), groups, 8, 5))
    cols = pooled.arrays()
    # the mean of the terms is the mean of their sum, the score
    terms = cols["position"] + cols["bias"] + cols["content"] + cols["query_only"]
    assert np.abs(terms - cols["score"]).max() <= 1e-12
    exact = cols["query"] < MAP_TOKENS
    assert (cols["span"][exact] == 1).all()
    assert cols["span"].sum() == len(table)


@pytest.mark.parametrize("shuffled", [False, True])
def test_groups_are_numbered_in_the_order_rows_first_show_them(shuffled):
    """``pooling._groups``: each row's group and each group's first row, groups numbered
    by first appearance, against a loop; rows in group order (as the analyses write a
    per-query table) take the runs, shuffled ones the sort."""
    from attnreport.results.pooling import _groups

    rng = np.random.default_rng(3)
    layer, head, query = (
        a.ravel() for a in np.meshgrid(*map(np.arange, (2, 3, 30)), indexing="ij")
    )
    order = rng.permutation(len(layer)) if shuffled else np.arange(len(layer))
    columns = {"layer": layer[order], "head": head[order], "query": query[order]}
    starts = bin_starts(columns["query"], MAP_TOKENS, 5)
    seen: dict[tuple, int] = {}
    expected_group, expected_first = [], []
    for i, key in enumerate(zip(columns["layer"], columns["head"], starts, strict=True)):
        if key not in seen:
            seen[key] = len(seen)
            expected_first.append(i)
        expected_group.append(seen[key])
    group, first = _groups(columns, starts)
    assert group.tolist() == expected_group and first.tolist() == expected_first


def test_pooled_top_takes_majorities_and_means():
    rng = np.random.default_rng(1)
    n = 40
    top_key = rng.integers(0, 3, size=n)
    table = rt.TopTable(
        layer=np.zeros(n, dtype=int),
        head=np.zeros(n, dtype=int),
        query=np.arange(n),
        top_key=top_key,
        top_is_self=top_key == np.arange(n),
        top_is_first=top_key == 0,
        p_top1=rng.random(n),
        p_top2=rng.random(n),
        concentration=rng.random(n),
    )
    groups = ("layer", "head")
    expected = reference_pool(table.arrays(), groups, MAP_TOKENS, POOL_WIDTH)
    assert_same_rows(as_dict(pool_table(table, MAP_TOKENS), groups), expected)


@pytest.fixture(scope="module")
def long_run(tiny_model_dirs, tmp_path_factory):
    """A 45-token sentence and a 6-token one on the tiny Llama, ``map_tokens`` 8."""
    folder = tmp_path_factory.mktemp("pooled")
    sentences = folder / "s.txt"
    long_text = story(45)
    sentences.write_text(f"{long_text}\nthe cat sat on the mat\n")
    session = open_session(str(tiny_model_dirs["llama"]), str(sentences), bos="never")
    settings = Settings(map_tokens=MAP_TOKENS)
    return session, settings


def test_stored_tables_pool_only_what_is_drawn(long_run):
    session, settings = long_run
    sentence = session.sentences[0]
    assert len(sentence.token_ids) > MAP_TOKENS + POOL_WIDTH  # two bins, the last shorter
    analysis = study.analyze_sentence(session, sentence, settings)
    ids = torch.tensor(sentence.token_ids)
    full, _ = analyze_pass(session.model, session.specs, ids, settings)
    stored = analysis.result.tables
    for name, groups in (
        ("top", ("layer", "head")),
        ("breakdown", ("layer", "head", "rank")),
        ("head_impact", ("layer", "head")),
    ):
        expected = reference_pool(getattr(full, name).arrays(), groups, MAP_TOKENS, POOL_WIDTH)
        assert_same_rows(as_dict(getattr(stored, name), groups), expected)
    # statistics over every query: from every query, as before
    for name in ("focus", "focus_sorted", "block_impact", "head_roles"):
        for column, values in getattr(full, name).arrays().items():
            assert np.array_equal(getattr(stored, name).arrays()[column], values), (name, column)
    assert np.array_equal(analysis.head_impact["query"], full.head_impact.query)
    caption = pooled_caption(stored.breakdown)
    assert f"positions 0-{MAP_TOKENS - 1} one by one" in caption
    assert f"from position {MAP_TOKENS} on" in caption and str(POOL_WIDTH) in caption


def test_span_is_written_only_where_rows_pool(long_run):
    session, settings = long_run
    long, short = (study.analyze_sentence(session, s, settings).result for s in session.sentences)
    for name in ("top", "breakdown", "head_impact"):
        assert "span" not in getattr(short.tables, name).to_json()["columns"]
        written = getattr(long.tables, name).to_json()
        assert "span" in written["columns"]
        again = type(getattr(long.tables, name)).from_json(json.loads(json.dumps(written)), "t")
        assert again.span.tolist() == getattr(long.tables, name).span.tolist()
        assert again.span.max() == POOL_WIDTH
    old = json.loads(json.dumps(short.tables.top.to_json()))  # a file without the column
    assert (rt.TopTable.from_json(old, "t").span == 1).all()
