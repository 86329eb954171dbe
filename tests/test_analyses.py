"""Known-answer tests for ``attnreport.analyses`` on hand-built layer records."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnreport.analyses import (
    FOCUS_STATISTICS,
    analyze_layer,
    attention_triangles,
    block_impact_table,
    breakdown_table,
    concat_tables,
    focus_sorted,
    focus_table,
    head_impact_table,
    key_order,
    merge_layers,
    rank_keys,
    round_sig,
    table_to_json,
    top_table,
    triangle,
)
from attnreport.analyses.attention_map import descending_keys
from attnreport.records import TERM_NAMES, LayerRecord
from attnreport.results.maps import AttentionMaps
from tests.pooling_reference import pool_focus, pool_impact

SCHEMA = Path(__file__).resolve().parents[1] / "docs" / "results-schema.md"


def causal(n: int) -> torch.Tensor:
    return torch.tril(torch.ones(n, n, dtype=torch.bool))


def make_record(
    scores: torch.Tensor,
    allowed: torch.Tensor | None = None,
    layer: int = 0,
    model: int = 8,
    seed: int = 0,
) -> LayerRecord:
    """A consistent LayerRecord around ``scores`` (head, query, key).

    probs = softmax over allowed keys; the four terms are random but sum to the scores
    on allowed entries; x, the heads' inputs to the output projection and its weight are
    random; block_out = sum of the updates + out_bias.
    """
    gen = torch.Generator().manual_seed(seed)
    scores = scores.to(torch.float32)
    n_heads, n = scores.shape[0], scores.shape[1]
    allowed = causal(n) if allowed is None else allowed
    filled = scores.masked_fill(~allowed, -torch.inf)
    probs = torch.softmax(filled, dim=-1).nan_to_num(0.0)
    clean = scores.masked_fill(~allowed, 0.0)
    position = torch.randn(scores.shape, generator=gen)
    bias = torch.randn(scores.shape, generator=gen)
    query_only = torch.randn(n_heads, n, 1, generator=gen).expand_as(scores).clone()
    content = clean - position - bias - query_only
    terms = {"position": position, "bias": bias, "content": content, "query_only": query_only}
    assert set(terms) == set(TERM_NAMES)
    heads_in = torch.randn(n_heads, n, 4, generator=gen)
    out_weight = torch.randn(n_heads, 4, model, generator=gen)
    updates = torch.einsum("hqd,hdm->hqm", heads_in, out_weight)
    out_bias = torch.randn(model, generator=gen)
    zeros = torch.zeros(n_heads, n, 2)
    return LayerRecord(
        layer=layer,
        x=torch.randn(n, model, generator=gen),
        a=torch.randn(n, model, generator=gen),
        q_raw=zeros,
        k_raw=zeros,
        q=zeros,
        k=zeros,
        v=zeros,
        logits=clean,
        scores=filled,
        probs=probs,
        allowed=allowed,
        context=zeros,
        heads_in=heads_in,
        out_weight=out_weight,
        out_bias=out_bias,
        block_out=updates.sum(0) + out_bias,
        terms=terms,
    )


def pattern_scores(n: int) -> torch.Tensor:
    """Three heads with a known argmax per row: first token, self, previous token."""
    scores = torch.zeros(3, n, n)
    rows = torch.arange(n)
    scores[0, :, 0] = 10.0
    scores[1, rows, rows] = 10.0
    scores[2, rows, (rows - 1).clamp(min=0)] = 10.0
    return scores


def random_record(n: int, n_heads: int = 3, layer: int = 0, seed: int = 0) -> LayerRecord:
    gen = torch.Generator().manual_seed(seed + 1000)
    return make_record(torch.randn(n_heads, n, n, generator=gen), layer=layer, seed=seed)


# --- ranks and the top table -------------------------------------------------------------


def test_known_argmax_gives_top_key_flags_and_ranks() -> None:
    n = 4
    record = make_record(pattern_scores(n))
    top = top_table(record)
    assert top["top_key"].tolist() == [0, 0, 0, 0] + [0, 1, 2, 3] + [0, 0, 1, 2]
    assert top["top_is_first"].tolist() == [True] * 4 + [True, False, False, False] + [
        True,
        True,
        False,
        False,
    ]
    assert top["top_is_self"].tolist() == [True, False, False, False] + [True] * 4 + [
        True,
        False,
        False,
        False,
    ]
    assert top["head"].tolist() == [0] * 4 + [1] * 4 + [2] * 4
    assert top["query"].tolist() == [0, 1, 2, 3] * 3
    ranks = rank_keys(record.scores, record.allowed)
    # head 2, row 3: key 2 wins, then the tie 0 = 1 = 3 (all 0.0) in key order.
    assert ranks[2, 3].tolist() == [1, 2, 0, 3]
    assert ranks[1, 2].tolist() == [1, 2, 0, -1]
    assert ranks[0, 0].tolist() == [0, -1, -1, -1]


def test_ties_go_to_the_lower_key_index() -> None:
    scores = torch.tensor(
        [[[1.0, 0, 0, 0], [2.0, 2.0, 0, 0], [0.5, 3.0, 3.0, 0], [1.0, 3.0, 1.0, 3.0]]]
    )
    record = make_record(scores)
    ranks = rank_keys(record.scores, record.allowed)
    assert ranks[0].tolist() == [[0, -1, -1, -1], [0, 1, -1, -1], [2, 0, 1, -1], [2, 0, 3, 1]]
    assert top_table(record)["top_key"].tolist() == [0, 0, 1, 1]
    uniform = make_record(torch.zeros(1, 5, 5))
    expected = [[j if j <= i else -1 for j in range(5)] for i in range(5)]
    assert rank_keys(uniform.scores, uniform.allowed)[0].tolist() == expected


def test_masked_keys_rank_minus_one_inside_a_sliding_window() -> None:
    n = 5
    rows, cols = torch.arange(n)[:, None], torch.arange(n)[None, :]
    window = (cols <= rows) & (cols > rows - 2)  # each query sees itself and one earlier key
    scores = torch.arange(n * n, dtype=torch.float32).reshape(1, n, n)
    record = make_record(scores, allowed=window)
    ranks = rank_keys(record.scores, record.allowed)[0]
    assert ranks[~window.numpy()].tolist() == [-1] * int((~window).sum())
    assert ranks[3].tolist() == [-1, -1, 1, 0, -1]
    tri = attention_triangles(record)
    assert tri["scores"][0][3][:2] == [None, None]
    maps = AttentionMaps([tri["scores"]], rank_fixes=tri["rank_fixes"])  # what a reader derives
    assert maps.ranks[0][0][3] == [-1, -1, 1, 0]
    assert maps.probs[0][0][3][:2] == [0.0, 0.0]
    assert maps.probs[0][0][3][2:] == pytest.approx(torch.softmax(scores[0, 3, 2:4], -1).tolist())


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_ranks_follow_score_then_key_order(data: st.DataObject) -> None:
    n = data.draw(st.integers(1, 7))
    values = data.draw(st.lists(st.integers(-2, 2), min_size=2 * n * n, max_size=2 * n * n))
    scores = torch.tensor(values, dtype=torch.float32).reshape(2, n, n)
    allowed = torch.tensor(data.draw(st.lists(st.booleans(), min_size=n * n, max_size=n * n)))
    allowed = allowed.reshape(n, n)
    ranks = rank_keys(scores, allowed)
    for h in range(2):
        for i in range(n):
            keys = [j for j in range(n) if allowed[i, j]]
            expected = sorted(keys, key=lambda j, h=h, i=i: (-float(scores[h, i, j]), j))
            assert [int(np.flatnonzero(ranks[h, i] == r)[0]) for r in range(len(keys))] == expected
            assert (ranks[h, i][~allowed[i].numpy()] == -1).all()


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 8, 9, 16, 17, 300])
def test_descending_keys_is_the_stable_argsort_on_ties_signed_zeros_and_infinities(n) -> None:
    """The integer sort (``descending_keys``) against torch's own stable argsort of the
    negated scores, on float32 rows drawn from a few values (ties everywhere), with -0.0
    beside 0.0 (equal scores: key order decides), masked keys (-inf), +inf and the
    largest floats; and on float64, which takes torch's path. Key counts either side of
    a power of two, where the key index's bits change."""
    gen = torch.Generator().manual_seed(n)
    values = torch.randint(-3, 4, (3, 7, n), generator=gen).float() / 2
    for fill, share in ((-0.0, 0.15), (-torch.inf, 0.15), (torch.inf, 0.05), (3e38, 0.05), (-3e38, 0.05)):  # fmt: skip
        values[torch.rand(values.shape, generator=gen) < share] = fill
    expected = torch.argsort(-values, dim=-1, stable=True)
    assert torch.equal(descending_keys(values), expected)
    assert torch.equal(descending_keys(values.double()), expected)
    if n == 300:  # unrounded scores: few ties
        noisy = torch.randn(2, 5, n, generator=gen)
        assert torch.equal(descending_keys(noisy), torch.argsort(-noisy, dim=-1, stable=True))


def test_concentration_of_one_hot_and_uniform_rows() -> None:
    n = 6
    one_hot = torch.full((1, n, n), -1e4)
    one_hot[0, :, 0] = 0.0
    uniform = torch.zeros(1, n, n)
    scores = torch.cat([one_hot, uniform])
    top = top_table(make_record(scores))
    assert top["concentration"][:n].tolist() == [1.0] * n
    assert top["p_top1"][:n].tolist() == [1.0] * n
    assert top["concentration"][n:].tolist() == [1.0] + [0.0] * (n - 1)
    assert top["p_top2"][n:].tolist()[0] == 0.0
    focus = focus_table(make_record(scores))
    assert focus["concentration"].tolist() == [1.0, 0.0]


def test_top_table_columns_and_dtypes() -> None:
    top = top_table(random_record(5))
    assert list(top) == [
        "layer",
        "head",
        "query",
        "top_key",
        "top_is_self",
        "top_is_first",
        "p_top1",
        "p_top2",
        "concentration",
    ]
    assert top["top_key"].dtype == np.int64 and top["top_is_self"].dtype == np.bool_
    assert top["p_top1"].dtype == np.float64
    assert np.all(top["concentration"] >= 0)


# --- focus ----------------------------------------------------------------------------------


def test_focus_of_hand_built_heads() -> None:
    n = 5
    focus = focus_table(make_record(pattern_scores(n), layer=7))
    assert focus["layer"].tolist() == [7, 7, 7]
    assert focus["head"].tolist() == [0, 1, 2]
    assert focus["first_focus"].tolist() == [1.0, 0.0, 0.25]  # previous-token head: only i = 1
    assert focus["self_focus"].tolist() == [0.0, 1.0, 0.0]
    assert focus["n_queries"].tolist() == [n - 1] * 3
    assert focus["n_queries"].dtype == np.int64


def test_one_token_sentence_has_no_queries() -> None:
    focus = focus_table(make_record(torch.zeros(2, 1, 1)))
    assert focus["n_queries"].tolist() == [0, 0]
    for name in FOCUS_STATISTICS:
        assert focus[name].tolist() == [0.0, 0.0]


def test_focus_sorted_lines_never_cross_and_keep_head_ids() -> None:
    tables = [
        focus_table(random_record(9, n_heads=6, layer=layer, seed=layer)) for layer in range(3)
    ]
    focus = concat_tables(tables)
    ranked = focus_sorted(focus)
    assert list(ranked) == ["statistic", "layer", "line", "head", "value"]
    assert len(ranked["head"]) == 3 * 3 * 6
    for statistic in FOCUS_STATISTICS:
        for layer in range(3):
            rows = (ranked["statistic"] == statistic) & (ranked["layer"] == layer)
            assert ranked["line"][rows].tolist() == list(range(6))
            assert sorted(ranked["head"][rows].tolist()) == list(range(6))
            assert np.all(np.diff(ranked["value"][rows]) <= 0)
            source = focus[statistic][focus["layer"] == layer]
            assert (
                ranked["value"][rows].tolist() == round_sig(source[ranked["head"][rows]]).tolist()
            )


def test_focus_sorted_ties_go_to_the_lower_head() -> None:
    focus = {
        "layer": np.array([0, 0, 0, 0]),
        "head": np.array([0, 1, 2, 3]),
        "self_focus": np.array([0.5, 0.75, 0.5, 0.75]),
        "first_focus": np.array([0.1, 0.1, 0.1, 0.1]),
        "concentration": np.array([0.2, 0.3, 0.3 + 1e-12, 0.1]),  # equal once published
        "n_queries": np.array([4, 4, 4, 4]),
    }
    ranked = focus_sorted(focus)
    by_stat = {s: ranked["head"][ranked["statistic"] == s].tolist() for s in FOCUS_STATISTICS}
    assert by_stat == {
        "self_focus": [1, 3, 0, 2],
        "first_focus": [0, 1, 2, 3],
        "concentration": [1, 2, 0, 3],
    }


# --- breakdown ------------------------------------------------------------------------------


def test_breakdown_terms_sum_to_score_and_follow_ranks() -> None:
    n, k = 6, 3
    record = random_record(n, n_heads=2, layer=4)
    table = breakdown_table(record, ranks=k)
    assert list(table) == ["layer", "head", "query", "rank", "key", "score", *TERM_NAMES]
    assert len(table["key"]) == 2 * sum(min(k, i + 1) for i in range(n))
    total = sum(table[name] for name in TERM_NAMES)
    np.testing.assert_allclose(total, table["score"], rtol=0, atol=1e-5)
    ranks = rank_keys(record.scores, record.allowed)
    assert (ranks[table["head"], table["query"], table["key"]] == table["rank"]).all()
    np.testing.assert_array_equal(
        table["score"], record.scores.numpy()[table["head"], table["query"], table["key"]]
    )
    assert table["layer"].tolist() == [4] * len(table["key"])
    rows = table["query"] == 0
    assert table["rank"][rows].tolist() == [0, 0]


def test_breakdown_rank_zero_is_the_known_argmax() -> None:
    table = breakdown_table(make_record(pattern_scores(4)), ranks=1)
    assert table["key"].tolist() == [0, 0, 0, 0] + [0, 1, 2, 3] + [0, 0, 1, 2]
    assert breakdown_table(make_record(pattern_scores(4)), ranks=0)["key"].tolist() == []


def test_breakdown_needs_every_term() -> None:
    record = random_record(3)
    partial = LayerRecord(**{**record.__dict__, "terms": {"content": record.scores}})
    with pytest.raises(ValueError, match="position"):
        breakdown_table(partial)


# --- impact ---------------------------------------------------------------------------------


def test_head_and_block_impact_match_numpy() -> None:
    record = random_record(6, n_heads=3, layer=2)
    x = record.x.clone()
    x[2] = 0.0
    heads_in = record.heads_in.clone()
    heads_in[1, 3] = 0.0  # a head that writes nothing there
    record = LayerRecord(**{**record.__dict__, "x": x, "heads_in": heads_in})
    # float64 from the float64 weights: independent of the float32 path under test
    us = np.einsum("hqd,hdm->hqm", heads_in.double().numpy(), record.out_weight.double().numpy())
    xs = x.double().numpy()
    x_norm = np.linalg.norm(xs, axis=-1)
    u_norm = np.linalg.norm(us, axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        magnitude = np.nan_to_num(u_norm / x_norm, nan=0.0, posinf=0.0)
        cosine = np.nan_to_num((us * xs).sum(-1) / (u_norm * x_norm), nan=0.0, posinf=0.0)
    table = head_impact_table(record)
    # ||u|| and u.x are float32 sums (``updates.update_numbers``): a few float32 ulps
    np.testing.assert_allclose(table["magnitude"], magnitude.reshape(-1), rtol=1e-6)
    np.testing.assert_allclose(table["orientation"], cosine.reshape(-1), rtol=1e-6, atol=1e-6)
    assert table["magnitude"].reshape(3, 6)[:, 2].tolist() == [0.0] * 3
    assert table["orientation"].reshape(3, 6)[1, 3] == 0.0
    assert table["magnitude"].reshape(3, 6)[1, 3] == 0.0
    block = block_impact_table(record)
    out_norm = np.linalg.norm(record.block_out.double().numpy(), axis=-1)
    with np.errstate(divide="ignore"):
        expected = np.where(x_norm > 0, out_norm / x_norm, 0.0)
    np.testing.assert_allclose(block["magnitude"], expected, rtol=1e-12)
    top = top_table(record)
    first = top["top_is_first"].reshape(3, 6).sum(0)
    assert block["top_first_heads"].tolist() == first.tolist()
    assert block["top_first_heads"][0] == 3


def test_block_impact_counts_first_token_heads() -> None:
    block = block_impact_table(make_record(pattern_scores(4)))
    assert block["top_first_heads"].tolist() == [3, 2, 1, 1]
    assert block["query"].tolist() == [0, 1, 2, 3]


# --- pooling --------------------------------------------------------------------------------


def sentence_records(lengths: list[int], n_layers: int = 2) -> list[list[LayerRecord]]:
    return [
        [random_record(n, layer=layer, seed=10 * s + layer) for layer in range(n_layers)]
        for s, n in enumerate(lengths)
    ]


def test_pooled_focus_equals_the_statistic_over_all_query_tokens() -> None:
    lengths = [5, 1, 9, 3]
    sentences = sentence_records(lengths)
    per_sentence = [concat_tables([focus_table(r) for r in records]) for records in sentences]
    by_sentence, pooled, ranked = pool_focus(per_sentence)
    assert by_sentence["sentence"].tolist() == [s for s in range(4) for _ in range(6)]
    assert list(pooled) == [
        "layer",
        "head",
        "statistic",
        "value",
        "min",
        "q1",
        "median",
        "q3",
        "max",
        "n_sentences",
    ]
    assert list(ranked) == ["statistic", "layer", "line", "head", "value", "min", "max"]
    for layer in range(2):
        tops = [top_table(records[layer]) for records in sentences]
        for head in range(3):
            indicators: dict[str, list[np.ndarray]] = {s: [] for s in FOCUS_STATISTICS}
            for top in tops:
                rows = (top["head"] == head) & (top["query"] >= 1)
                indicators["self_focus"].append(top["top_is_self"][rows])
                indicators["first_focus"].append(top["top_is_first"][rows])
                indicators["concentration"].append(top["concentration"][rows])
            for statistic in FOCUS_STATISTICS:
                direct = np.concatenate(indicators[statistic]).astype(float).mean()
                row = (
                    (pooled["layer"] == layer)
                    & (pooled["head"] == head)
                    & (pooled["statistic"] == statistic)
                )
                assert row.sum() == 1
                assert pooled["value"][row][0] == pytest.approx(direct, rel=1e-12, abs=1e-15)
                assert pooled["n_sentences"][row][0] == 3
                mask = (per_sentence[0]["layer"] == layer) & (per_sentence[0]["head"] == head)
                spread = [
                    t[statistic][mask][0]
                    for t, n in zip(per_sentence, lengths, strict=True)
                    if n > 1
                ]
                expected = np.quantile(spread, [0, 0.25, 0.5, 0.75, 1])
                got = [pooled[c][row][0] for c in ("min", "q1", "median", "q3", "max")]
                np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_pooled_focus_sorted_carries_min_and_max() -> None:
    per_sentence = [
        concat_tables([focus_table(r) for r in records]) for records in sentence_records([4, 6, 7])
    ]
    _, pooled, ranked = pool_focus(per_sentence)
    for i in range(len(ranked["head"])):
        row = (
            (pooled["layer"] == ranked["layer"][i])
            & (pooled["head"] == ranked["head"][i])
            & (pooled["statistic"] == ranked["statistic"][i])
        )
        assert ranked["min"][i] == pooled["min"][row][0]
        assert ranked["max"][i] == pooled["max"][row][0]
        assert ranked["value"][i] == round_sig(pooled["value"][row][0])


def test_pooling_only_one_token_sentences_gives_zeros() -> None:
    per_sentence = [focus_table(make_record(torch.zeros(2, 1, 1))) for _ in range(2)]
    _, pooled, _ = pool_focus(per_sentence)
    for column in ("value", "min", "q1", "median", "q3", "max"):
        assert pooled[column].tolist() == [0.0] * 6
    assert pooled["n_sentences"].tolist() == [0] * 6


def test_pool_focus_rejects_misaligned_sentences() -> None:
    a = focus_table(random_record(3, n_heads=2))
    b = focus_table(random_record(3, n_heads=3))
    with pytest.raises(ValueError):
        pool_focus([a, b])
    with pytest.raises(ValueError):
        pool_focus([])


def test_pool_impact_is_the_mean_over_all_tokens() -> None:
    sentences = sentence_records([4, 1, 7])
    per_sentence = [concat_tables([head_impact_table(r) for r in records]) for records in sentences]
    pooled = pool_impact(per_sentence)
    assert list(pooled) == ["layer", "head", "magnitude", "orientation", "n_tokens"]
    assert pooled["layer"].tolist() == [0, 0, 0, 1, 1, 1]
    assert pooled["head"].tolist() == [0, 1, 2, 0, 1, 2]
    assert pooled["n_tokens"].tolist() == [12] * 6
    for i in range(6):
        layer, head = pooled["layer"][i], pooled["head"][i]
        xs = np.concatenate([records[layer].x.double().numpy() for records in sentences])
        us = np.concatenate(
            [records[layer].updates[head].double().numpy() for records in sentences]
        )
        norms = np.linalg.norm(us, axis=-1), np.linalg.norm(xs, axis=-1)
        # each row's ||u|| and u.x are float32 sums: a few float32 ulps (a mean per
        # sentence, or per token of the wrong sentences, is off by far more)
        assert pooled["magnitude"][i] == pytest.approx((norms[0] / norms[1]).mean(), rel=1e-6)
        cosine = (us * xs).sum(-1) / (norms[0] * norms[1])
        assert pooled["orientation"][i] == pytest.approx(cosine.mean(), rel=1e-6, abs=1e-6)


# --- sentence assembly ----------------------------------------------------------------------


def schema_columns(file: str) -> dict[str, list[str]]:
    """Table name -> column names of ``file``'s section of docs/results-schema.md."""
    pattern = re.compile(r'^\s+"(\w+)":\s+([a-z0-9_]+(?:, [a-z0-9_]+)+)\s*$')
    section = SCHEMA.read_text().split(f"## `{file}`")[1].split("\n## ")[0]
    found = {}
    for line in section.splitlines():
        match = pattern.match(line)
        if match:
            found[match.group(1)] = match.group(2).split(", ")
    return found


def test_schema_doc_lists_the_tables() -> None:
    """The documented tables are the typed results' table fields (the one list of them)."""
    from attnreport.results import types

    assert list(schema_columns("sentences/NNN.json.gz")) == list(
        types.table_kinds(types.SentenceTables)
    )
    assert list(schema_columns("set.json.gz")) == list(types.table_kinds(types.SetResults))


def test_merged_sentence_tables_follow_the_schema() -> None:
    from attnreport.results import types

    columns = schema_columns("sentences/NNN.json.gz")
    records = [random_record(5, layer=layer, seed=layer) for layer in range(3)]
    merged = merge_layers([analyze_layer(r) for r in records])
    assert list(merged) == [
        "top",
        "breakdown",
        "focus",
        "focus_sorted",
        "head_impact",
        "block_impact",
    ]
    kinds = types.table_kinds(types.SentenceTables)
    for name, table in merged.items():
        # a column written only where it is not its fill (``span``: where rows pool) is
        # absent from these exact rows
        omitted = {c.name for c in kinds[name].columns() if c.omitted}
        assert list(table) == [c for c in columns[name] if c not in omitted], name
    assert merged["top"]["layer"].tolist() == [0] * 15 + [1] * 15 + [2] * 15
    assert merged["block_impact"]["layer"].tolist() == [0] * 5 + [1] * 5 + [2] * 5
    assert len(merged["focus_sorted"]["head"]) == 3 * 3 * 3
    sentences = [[random_record(n, layer=layer) for layer in range(2)] for n in (3, 4)]
    per_sentence = [merge_layers([analyze_layer(r) for r in rs]) for rs in sentences]
    by_sentence, pooled, ranked = pool_focus([t["focus"] for t in per_sentence])
    impact = pool_impact([t["head_impact"] for t in per_sentence])
    set_columns = schema_columns("set.json.gz")
    set_tables = {
        "focus_by_sentence": by_sentence,
        "focus_pooled": pooled,
        "focus_sorted": ranked,
        "impact_pooled": impact,
    }
    for name, table in set_tables.items():
        assert list(table) == set_columns[name], name
    json.dumps({name: table_to_json(table) for name, table in set_tables.items()})
    json.dumps({name: table_to_json(table) for name, table in merged.items()})


def test_analyses_do_not_modify_the_record() -> None:
    record = random_record(6)
    before = {k: v.clone() for k, v in record.__dict__.items() if isinstance(v, torch.Tensor)}
    terms = {k: v.clone() for k, v in record.terms.items()}
    analyze_layer(record)
    attention_triangles(record)
    for name, value in before.items():
        assert torch.equal(getattr(record, name), value), name
    for name, value in terms.items():
        assert torch.equal(record.terms[name], value), name


def test_shared_key_order_gives_the_same_tables() -> None:
    record = random_record(7)
    order = key_order(record.scores, record.allowed)
    shared, alone = analyze_layer(record, order=order), analyze_layer(record)
    for name in shared:
        assert json.dumps(table_to_json(shared[name])) == json.dumps(table_to_json(alone[name]))


# --- JSON -----------------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_round_sig_matches_string_formatting(value: float) -> None:
    expected = float(f"{value:.6g}")
    assert round_sig(value) == expected
    got = round_sig(np.array([value]))[0]
    assert got == expected and np.signbit(got) == np.signbit(expected)
    assert round_sig(got) == got


def test_round_sig_vectorised_matches_string_formatting_on_hard_cases() -> None:
    rng = np.random.default_rng(0)
    scales = 10.0 ** rng.integers(-30, 30, 20000)
    values = np.concatenate(
        [
            rng.standard_normal(20000) * scales,
            rng.standard_normal(20000).astype(np.float32).astype(np.float64),
            rng.integers(-(10**9), 10**9, 2000) / 10.0 ** rng.integers(0, 12, 2000),
            [123456.5, 0.1234565, 999999.5, 9999995.0, 99999.95, 1e-300, 5e-324, -0.0, 1e308],
        ]
    )
    expected = np.array([float(f"{v:.6g}") for v in values])
    got = round_sig(values)
    assert np.array_equal(got, expected)
    assert np.array_equal(np.signbit(got), np.signbit(expected))


def test_table_to_json_is_deterministic_and_typed() -> None:
    table = {
        "layer": np.array([0, 1], dtype=np.int64),
        "flag": np.array([True, False]),
        "value": np.array([1 / 3, 2.0 / 7.0], dtype=np.float64),
        "label": np.array(["a", "b"]),
    }
    first = json.dumps(table_to_json(table), sort_keys=True)
    again = json.dumps(table_to_json({k: v.copy() for k, v in table.items()}), sort_keys=True)
    assert first == again
    columns = table_to_json(table)["columns"]
    assert columns == {
        "layer": [0, 1],
        "flag": [True, False],
        "value": [0.333333, 0.285714],
        "label": ["a", "b"],
    }
    assert [type(v) for v in columns["layer"] + columns["flag"] + columns["value"]] == [
        int,
        int,
        bool,
        bool,
        float,
        float,
    ]


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_table_to_json_rejects_non_finite(bad: float) -> None:
    with pytest.raises(ValueError):
        table_to_json({"value": np.array([1.0, bad])})
    with pytest.raises(ValueError):
        round_sig(bad)


def test_table_to_json_rejects_ragged_columns() -> None:
    with pytest.raises(ValueError):
        table_to_json({"a": np.array([1, 2]), "b": np.array([1.0])})


def test_triangle_keeps_the_causal_lower_triangle() -> None:
    matrix = torch.tensor(
        [[1 / 3, -torch.inf, -torch.inf], [0.5, 2 / 3, -torch.inf], [1.0, 2.0, 1e-7]]
    )
    assert triangle(matrix) == [[0.333333], [0.5, 0.666667], [1.0, 2.0, 1e-7]]
    ints = triangle(np.array([[0, -1], [1, 0]]))
    assert ints == [[0], [1, 0]] and type(ints[1][0]) is int
    with pytest.raises(ValueError):
        triangle(torch.full((2, 2), torch.nan))
    big = torch.randn(1024, 1024)
    tri = triangle(big)
    assert [len(row) for row in tri[:3]] == [1, 2, 3] and len(tri[-1]) == 1024
    assert tri[700][:5] == round_sig(big[700, :5]).tolist()


def test_attention_triangles_have_one_triangle_per_head() -> None:
    record = make_record(pattern_scores(4))
    tri = attention_triangles(record)
    assert set(tri) == {"scores", "rank_fixes", "order"} and tri["order"] is None
    assert len(tri["scores"]) == 3 and tri["scores"][1][2] == [0.0, 0.0, 10.0]
    maps = AttentionMaps([tri["scores"]], rank_fixes=tri["rank_fixes"])
    assert maps.ranks[0][1][3] == [1, 2, 3, 0]
    assert maps.probs[0][0][0] == [1.0]
    json.dumps(maps.to_json())  # the nested rows of schema 9, as JSON


@pytest.mark.parametrize("window", [None, 3])
@pytest.mark.parametrize("seed", range(3))
def test_the_first_ranks_alone_give_the_full_sorts_keys_and_every_table(seed, window):
    """``key_order(depth=k)`` (one topk, for a sentence without maps) against the full
    stable sort: the same keys at ranks 0..k-1 wherever a row has that many allowed keys,
    scores drawn from a few values so rows tie, a window masking some; and every table of
    ``analyze_layer`` the same with either order."""
    gen = torch.Generator().manual_seed(seed)
    n = 9
    scores = torch.randint(0, 3, (3, n, n), generator=gen).float()
    allowed = causal(n)
    if window is not None:
        allowed &= ~torch.ones(n, n, dtype=torch.bool).tril(-window)
    full = key_order(scores, allowed)
    for depth in (1, 2, 3, 5):
        part = key_order(scores, allowed, depth)
        assert part.ranks is None and part.order.shape == (3, n, depth)
        has = torch.arange(depth) < full.n_allowed[:, None]  # (query, rank)
        assert torch.equal(part.order[:, has], full.order[:, :, :depth][:, has])
    record = make_record(scores, allowed, seed=seed)
    a = analyze_layer(record, 3, key_order(record.scores, record.allowed))
    b = analyze_layer(record, 3, key_order(record.scores, record.allowed, 3))
    assert json.dumps({k: table_to_json(v) for k, v in a.items()}) == json.dumps(
        {k: table_to_json(v) for k, v in b.items()}
    )


def _tied_scores(gen: np.random.Generator, heads: int, n: int) -> torch.Tensor:
    """float32 scores that tie often after rounding to 3 decimals, and exactly: a few
    thousandths plus steps below a thousandth; exact halves of a thousandth (odd/16, odd
    /2000 does not exist in binary: 0.0625 * 1000 = 62.5 is the tie to even), -0.0 beside
    0.0, and some large values."""
    base = gen.integers(-3, 4, (heads, n, n)) / 1000
    step = gen.integers(0, 3, (heads, n, n)) * 2.0**-14
    values = (base + step).astype(np.float32)
    pick = gen.random((heads, n, n))
    values[pick < 0.05] = gen.choice([1, 3, 5, -7, 9], (pick < 0.05).sum()) / 16
    values[(pick >= 0.05) & (pick < 0.1)] = -0.0
    values[(pick >= 0.1) & (pick < 0.12)] = gen.choice([3e7, -2.5e9, 1e-30], 1)[0]
    return torch.from_numpy(values)


@pytest.mark.parametrize("window", [None, 5])
@pytest.mark.parametrize("n", [1, 2, 31, 32, 33, 70])
def test_float32_maps_are_the_general_paths(n, window):
    """``attention_triangles`` of float32 scores (one sort, by blocks of queries) against
    the same scores in float64 (``key_order``'s full sort, ``rounded_array`` and
    ``results.maps.rank_fixes``): the same written scores, each Python's ``round(v, 3)``,
    and the same rank fixes; and the ranks the written maps give back are the analysis'
    every key's rank, on rows that tie after rounding (the case is not vacuous)."""
    gen = np.random.default_rng(n)
    scores = _tied_scores(gen, 3, n)
    allowed = causal(n)
    if window is not None:
        allowed &= ~torch.ones(n, n, dtype=torch.bool).tril(-window)
    record = make_record(scores, allowed)
    fast = attention_triangles(record)
    general = attention_triangles(dataclasses.replace(record, scores=record.scores.double()))
    assert fast["rank_fixes"] == general["rank_fixes"]
    for head, (a, b) in enumerate(zip(fast["scores"], general["scores"], strict=True)):
        assert np.array_equal(a.values, b.values, equal_nan=True)
        for query in range(n):
            for key in range(query + 1):
                value = float(scores[head, query, key])
                expected = round(value, 3) + 0.0 if allowed[query, key] else None
                assert a[query][key] == expected
                if expected == 0:
                    assert not np.signbit(a[query][key])  # no -0.0 written
    maps = AttentionMaps([fast["scores"]], rank_fixes=fast["rank_fixes"])
    ranks = key_order(record.scores, allowed).ranks
    for head in range(3):
        for query in range(n):
            assert maps.ranks[0][head][query] == ranks[head, query, : query + 1].tolist()
    if n >= 31:
        assert len(fast["rank_fixes"]) > 5


@pytest.mark.parametrize("window", [None, 5])
@pytest.mark.parametrize("n", [1, 2, 33, 70])
@pytest.mark.parametrize("scores_dtype", [torch.float32, torch.float64])
def test_the_maps_sort_gives_the_tables_their_first_ranks(n, window, scores_dtype):
    """``attention_triangles(record, depth)``'s ``order`` (read from the maps' own sort,
    the float32 one by blocks of queries or the general one) against ``key_order``'s
    topk: the same keys at every rank a row has, on scores that tie, with depths past a
    block's first keys and past the sentence; every table of ``analyze_layer`` the same
    with either order; the written maps the same as without ``depth``."""
    gen = np.random.default_rng(n)
    allowed = causal(n)
    if window is not None:
        allowed &= ~torch.ones(n, n, dtype=torch.bool).tril(-window)
    record = make_record(_tied_scores(gen, 3, n), allowed)
    record = dataclasses.replace(record, scores=record.scores.to(scores_dtype))
    for depth in (1, 2, 3, 40):
        kept = attention_triangles(record, depth)
        alone = key_order(record.scores, record.allowed, depth)
        assert kept["order"] is not None and kept["order"].ranks is None
        assert kept["order"].order.shape == (3, n, depth)
        assert torch.equal(kept["order"].n_allowed, alone.n_allowed)
        has = torch.arange(depth) < alone.n_allowed[:, None]  # (query, rank)
        assert torch.equal(kept["order"].order[:, has], alone.order[:, has])
        a = analyze_layer(record, 3, kept["order"]) if depth >= 3 else None
        b = analyze_layer(record, 3, alone) if depth >= 3 else None
        if a is not None and b is not None:
            assert json.dumps({k: table_to_json(v) for k, v in a.items()}) == json.dumps(
                {k: table_to_json(v) for k, v in b.items()}
            )
        plain = attention_triangles(record)
        assert plain["order"] is None and plain["rank_fixes"] == kept["rank_fixes"]
        for x, y in zip(plain["scores"], kept["scores"], strict=True):
            assert np.array_equal(x.values, y.values, equal_nan=True)


def test_float32_maps_refuse_what_has_no_map():
    record = make_record(torch.zeros(2, 4, 4))
    bad = record.scores.clone()
    bad[1, 2, 1] = torch.nan
    with pytest.raises(ValueError, match="must be finite"):
        attention_triangles(dataclasses.replace(record, scores=bad))
    with pytest.raises(ValueError, match="past its query"):
        attention_triangles(dataclasses.replace(record, allowed=torch.ones(4, 4, dtype=torch.bool)))
