"""Known answers for every head-role score, on attention patterns built by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from attnreport.analyses.probes import (
    induction_scores,
    make_probes,
    massive_activation_row,
    previous_token_scores,
    probe_offset,
    probe_table,
)
from attnreport.analyses.roles import (
    head_roles_table,
    repeat_pairs,
    role_query_values,
    roles_of_probs,
    value_norms,
)


def causal(n: int, window: int | None = None) -> torch.Tensor:
    q, k = torch.arange(n)[:, None], torch.arange(n)[None, :]
    ok = k <= q
    return ok if window is None else ok & (k > q - window)


def uniform(n: int, window: int | None = None) -> torch.Tensor:
    allowed = causal(n, window).double()
    return (allowed / allowed.sum(-1, keepdim=True))[None]  # (1, query, key)


def previous(n: int) -> torch.Tensor:
    p = torch.zeros(1, n, n, dtype=torch.float64)
    p[0, 0, 0] = 1.0
    p[0, torch.arange(1, n), torch.arange(n - 1)] = 1.0
    return p


def ones(n: int, heads: int = 1) -> torch.Tensor:
    return torch.ones(heads, n, dtype=torch.float64)


def sink(n: int) -> torch.Tensor:
    """A pure sink head: every query puts all its weight on token 0."""
    p = torch.zeros(1, n, n, dtype=torch.float64)
    p[0, :, 0] = 1.0
    return p


def previous_reference(p: torch.Tensor) -> list[float]:
    """Per head, the mean of p[i, i-1] over the queries whose previous token is not the
    first token (i >= 2), written as plain loops: the definition, independently."""
    out = []
    for head in p.tolist():
        n = len(head)
        weights = [head[i][i - 1] for i in range(2, n)]
        out.append(sum(weights) / len(weights) if weights else 0.0)
    return out


def test_previous_token_head_scores_one_and_a_uniform_head_the_mean_of_one_over_i_plus_1():
    n = 6
    table = roles_of_probs(0, torch.cat([previous(n), uniform(n)]), causal(n), None, ones(n, 2))
    assert table["previous_token"][0] == pytest.approx(1.0)
    expected = np.mean([1 / (i + 1) for i in range(2, n)])  # query 1 is not counted
    assert table["previous_token"][1] == pytest.approx(expected)
    assert table["n_queries"].tolist() == [n - 1, n - 1]
    assert table["n_previous"].tolist() == [n - 2, n - 2]


@pytest.mark.parametrize("n", [2, 3, 8, 30])
def test_a_pure_sink_head_is_no_previous_token_head_at_any_length(n):
    """Query 1's previous token is the first token: a head that only attends to token 0
    scores 0 there, on sentences and on probes, whatever the sentence's length."""
    table = roles_of_probs(0, sink(n), causal(n), None, ones(n))
    assert table["previous_token"][0] == 0.0
    assert previous_token_scores(sink(n).float())[0] == 0.0
    # the score counted query 1 before (schema 8): 1 / (n - 1) for free
    assert table["n_previous"][0] == max(n - 2, 0)


def test_previous_token_equals_the_definition_on_random_patterns():
    torch.manual_seed(3)
    n = 11
    allowed = causal(n)
    scores = torch.randn(4, n, n, dtype=torch.float64).masked_fill(~allowed, -torch.inf)
    p = torch.softmax(scores, -1)
    p[1] = sink(n)[0]  # one pure sink among them
    table = roles_of_probs(0, p, allowed, None, ones(n, 4))
    expected = previous_reference(p)
    np.testing.assert_allclose(table["previous_token"], expected, rtol=0, atol=1e-12)
    np.testing.assert_allclose(previous_token_scores(p), expected, rtol=0, atol=1e-12)
    assert expected[1] == 0.0


def test_entropy_of_uniform_attention_is_ln_i_plus_1_and_normalises_to_one():
    n = 7
    table = roles_of_probs(0, torch.cat([uniform(n), previous(n)]), causal(n), None, ones(n, 2))
    assert table["entropy"][0] == pytest.approx(np.mean([math.log(i + 1) for i in range(1, n)]))
    assert table["entropy_normalised"][0] == pytest.approx(1.0)
    assert table["entropy"][1] == pytest.approx(0.0)  # one-hot rows
    assert table["entropy_normalised"][1] == pytest.approx(0.0)


def test_entropy_counts_the_learned_sink_as_an_outcome():
    n = 3
    p = torch.zeros(1, n, n, dtype=torch.float64)
    sink = torch.full((1, n), 0.5, dtype=torch.float64)
    p[0, :, 0] = 0.5  # half on token 0, half on the sink
    table = roles_of_probs(0, p, causal(n), None, ones(n), sink)
    assert table["entropy"][0] == pytest.approx(math.log(2))
    # outcomes: i + 1 allowed keys and the sink -> ln 2 / ln(i + 2)
    expected = np.mean([math.log(2) / math.log(i + 2) for i in (1, 2)])
    assert table["entropy_normalised"][0] == pytest.approx(expected)


def test_distance_is_the_probability_weighted_lag():
    n = 5
    first = torch.zeros(1, n, n, dtype=torch.float64)
    first[0, :, 0] = 1.0
    table = roles_of_probs(0, torch.cat([first, previous(n)]), causal(n), None, ones(n, 2))
    assert table["distance"][0] == pytest.approx(np.mean(range(1, n)))  # i - 0
    assert table["distance"][1] == pytest.approx(1.0)


def test_duplicate_token_is_the_weight_on_earlier_copies_over_the_repeating_rows():
    tokens = torch.tensor([7, 3, 7, 5, 3, 7])
    n = len(tokens)
    p = uniform(n)
    table = roles_of_probs(0, p, causal(n), tokens, ones(n))
    # repeating queries: 2 (one earlier 7 of 3 keys), 4 (one 3 of 5), 5 (two 7s of 6)
    expected = (1 / 3 + 1 / 5 + 2 / 6) / 3
    assert table["duplicate_token"][0] == pytest.approx(expected)
    assert table["n_duplicate"][0] == 3
    assert table["duplicate_weight"][0] == pytest.approx(3.0)
    dup = torch.zeros(1, n, n, dtype=torch.float64)
    dup[0, torch.arange(n), torch.arange(n)] = 1.0
    dup[0, 2], dup[0, 4], dup[0, 5] = 0, 0, 0
    dup[0, 2, 0] = dup[0, 4, 1] = dup[0, 5, 2] = 1.0
    table = roles_of_probs(0, dup, causal(n), tokens, ones(n))
    assert table["duplicate_token"][0] == pytest.approx(1.0)
    none = roles_of_probs(0, uniform(3), causal(3), torch.tensor([1, 2, 3]), ones(3))
    assert none["duplicate_token"][0] == 0.0 and none["n_duplicate"][0] == 0


def test_value_first_share_weighs_attention_by_the_value_norm():
    n = 4
    first_half = torch.zeros(1, n, n, dtype=torch.float64)
    first_half[0, 0, 0] = 1.0
    for i in range(1, n):
        first_half[0, i, 0], first_half[0, i, i] = 0.9, 0.1
    small = torch.tensor([[0.01, 1.0, 1.0, 1.0]], dtype=torch.float64)  # token 0: tiny value
    table = roles_of_probs(0, first_half, causal(n), None, small)
    share = 0.9 * 0.01 / (0.9 * 0.01 + 0.1 * 1.0)
    assert table["value_first_share"][0] == pytest.approx(share)
    equal = roles_of_probs(0, first_half, causal(n), None, ones(n))
    assert equal["value_first_share"][0] == pytest.approx(0.9)


def test_value_norms_are_the_value_through_the_heads_slice_of_w_o():
    torch.manual_seed(0)
    v = torch.randn(1, 3, 4)  # one kv head shared by two query heads
    w = torch.randn(2, 4, 5)
    norms = value_norms(v, w, groups=2)
    for h in range(2):
        for j in range(3):
            expected = torch.linalg.vector_norm(v[0, j].double() @ w[h].double())
            assert norms[h, j] == pytest.approx(float(expected))


def test_a_sliding_window_hides_earlier_keys_from_every_score():
    n, window = 6, 2
    p = uniform(n, window)
    tokens = torch.tensor([4, 4, 9, 4, 9, 9])
    table = roles_of_probs(0, p, causal(n, window), tokens, ones(n))
    assert table["previous_token"][0] == pytest.approx(0.5)  # queries 2..5, 2 keys each
    assert table["entropy_normalised"][0] == pytest.approx(1.0)  # ln 2 over 2 allowed keys
    assert table["n_first"][0] == 1  # only query 1 sees token 0
    # query 3's earlier 4s are at 0 and 1, outside its window: only 1, 5 repeat in-window
    assert table["n_duplicate"][0] == 2
    assert table["duplicate_token"][0] == pytest.approx(0.5)


@pytest.mark.parametrize("tokens", [[7, 3, 7, 5, 3, 7, 7], [4, 4, 4, 4], [1, 2, 3], [9], []])
def test_repeat_pairs_are_every_earlier_copy_in_order_of_the_later_position(tokens):
    ids = torch.tensor(tokens, dtype=torch.int64)
    later, earlier = repeat_pairs(ids)
    expected = [(i, j) for i in range(len(tokens)) for j in range(i) if tokens[i] == tokens[j]]
    assert list(zip(later.tolist(), earlier.tolist(), strict=True)) == expected


def test_blocks_of_queries_give_the_whole_patterns_values():
    torch.manual_seed(1)
    n, window = 9, 4
    allowed = causal(n, window)
    scores = torch.randn(2, n, n, dtype=torch.float64).masked_fill(~allowed, -torch.inf)
    p = torch.softmax(scores, -1)
    tokens = torch.tensor([1, 2, 1, 3, 2, 1, 1, 4, 2])
    norms = torch.rand(2, n, dtype=torch.float64) + 0.1
    whole = role_query_values(p, allowed, 0, 0, tokens, norms)
    for start, stop in ((0, 3), (3, 7), (7, 9)):
        first = max(0, start - window + 1)
        part = role_query_values(
            p[:, start:stop, first:stop], allowed[start:stop, first:stop], start, first,
            tokens, norms[:, first:stop],
        )  # fmt: skip
        for name, value in part.items():
            torch.testing.assert_close(value, whole[name][:, start:stop], msg=name)


def test_one_token_sentence_scores_zero():
    table = roles_of_probs(3, torch.ones(2, 1, 1), causal(1), torch.tensor([5]), ones(1, 2))
    for name in ("previous_token", "duplicate_token", "entropy", "distance", "value_first_share"):
        assert table[name].tolist() == [0.0, 0.0]
    assert table["layer"].tolist() == [3, 3]


def test_probes_are_reproducible_repeat_twice_and_skip_special_tokens():
    probes = make_probes(20, special_ids=[0, 1, 2], bos_id=1, count=3, length=50)
    assert probes == make_probes(20, special_ids=[0, 1, 2], bos_id=1, count=3, length=50)
    assert len(probes) == 3 and all(len(p) == 101 for p in probes)
    for probe in probes:
        assert probe[0] == 1 and probe[1:51] == probe[51:]
        assert not {0, 1, 2} & set(probe[1:])
    assert probe_offset(probes[0]) == 1
    plain = make_probes(20, special_ids=[], count=1, length=50)[0]
    assert len(plain) == 100 and probe_offset(plain) == 0
    with pytest.raises(ValueError):
        make_probes(2, special_ids=[0])


@pytest.mark.parametrize("offset", [0, 1])
def test_induction_reads_the_token_after_the_earlier_occurrence(offset):
    length = 5
    n = offset + 2 * length
    induction = torch.zeros(1, n, n)
    for i in range(n):
        target = i - length + 1 if i >= offset + length else 0
        induction[0, i, target] = 1.0
    prev = previous(n).float()
    probs = torch.cat([induction, prev, uniform(n).float()])
    scores = induction_scores(probs, offset, length)
    assert scores[0] == pytest.approx(1.0) and scores[1] == pytest.approx(0.0)
    queries = range(offset + length, offset + 2 * length)
    assert scores[2] == pytest.approx(np.mean([1 / (i + 1) for i in queries]))
    assert previous_token_scores(probs)[1] == pytest.approx(1.0)


def test_probe_table_averages_over_probes_per_layer_and_head():
    one = [(np.array([0.2, 0.4]), np.array([1.0, 0.0])), (np.array([0.0, 1.0]), np.zeros(2))]
    two = [(np.array([0.4, 0.0]), np.array([0.0, 0.0])), (np.array([1.0, 1.0]), np.ones(2))]
    table = probe_table([one, two])
    assert table["layer"].tolist() == [0, 0, 1, 1] and table["head"].tolist() == [0, 1, 0, 1]
    np.testing.assert_allclose(table["induction"], [0.3, 0.2, 0.5, 1.0])
    np.testing.assert_allclose(table["previous_token_probe"], [0.5, 0.0, 0.5, 0.5])


def test_massive_activation_is_the_largest_magnitude_and_its_ratio_to_the_median():
    x = torch.tensor([[1.0, -2.0, 1.0], [0.5, 1.0, -300.0], [1.0, 2.0, 1.0]])
    row = massive_activation_row(4, x)
    assert row["layer"].tolist() == [4]
    assert (row["position"][0], row["dimension"][0], row["value"][0]) == (1, 2, -300.0)
    assert row["median"][0] == 1.0 and row["ratio"][0] == 300.0
    zero = massive_activation_row(0, torch.zeros(2, 2))
    assert zero["ratio"][0] == 0.0 and zero["position"][0] == 0


def test_head_roles_table_keeps_head_order():
    values = role_query_values(uniform(4).repeat(3, 1, 1), causal(4), 0, 0, None, ones(4, 3))
    table = head_roles_table(2, values, causal(4)[:, 0])
    assert table["head"].tolist() == [0, 1, 2]
    assert list(table)[:2] == ["layer", "head"]


@pytest.mark.parametrize(
    "case", ["plain", "grouped-query", "window", "window-1", "sinks", "everything"]
)
def test_blockwise_head_roles_equal_the_dense_ones(case):
    """The long-input path (query blocks) gives the dense pattern's scores."""
    from attnreport.analyses.blockwise import analyze_layer_blockwise
    from attnreport.analyses.sentence import layer_role_tables
    from tests.test_blockwise import CASES, dense_reference, make_tensors

    options = dict(CASES[case])
    rows = options.pop("rows")
    t = make_tensors(seed=len(case), **options)
    record = dense_reference(t)[0]
    ids = torch.randint(0, 4, (t.n_tokens,), generator=torch.Generator().manual_seed(0))
    dense = layer_role_tables(record, ids, t.out_weight)
    streamed = analyze_layer_blockwise(t, rows=rows, roles=True, token_ids=ids)
    for name, table in dense.items():
        assert list(streamed[name]) == list(table)
        for column, expected in table.items():
            np.testing.assert_allclose(streamed[name][column], expected, rtol=1e-5, atol=1e-6)
    # the ids repeat within every window but a one-token one
    assert (dense["head_roles"]["n_duplicate"][0] > 0) == (t.window != 1)


@pytest.mark.parametrize("fill", ["finite", "-inf"])
def test_the_entropy_read_from_the_scores_is_the_definition(fill):
    """The entropy the dense pass reads from a float32 model's scores (``_entropy``: no
    logarithm per key) against the definition, -sum p ln p, summed by a float64 loop;
    a -inf fill for masked keys (0 x inf is no number) takes the logarithms instead,
    bit for bit the path without scores."""
    n, heads = 12, 3
    gen = torch.Generator().manual_seed(7)
    scale = torch.tensor([0.3, 3.0, 30.0])[:, None, None]  # diffuse to nearly one key
    allowed = causal(n, 8)
    filler = torch.finfo(torch.float32).min if fill == "finite" else -torch.inf
    scores = (torch.randn(heads, n, n, generator=gen) * scale).masked_fill(~allowed, filler)
    probs = torch.softmax(scores, dim=-1)
    top = scores.argmax(-1)
    read = roles_of_probs(0, probs, allowed, None, ones(n, heads), None, scores, top)
    plain = roles_of_probs(0, probs, allowed, None, ones(n, heads))
    expected = []
    for head in probs.double().tolist():
        rows = [-sum(p * math.log(p) for p in row if p > 0) for row in head[1:]]
        expected.append(sum(rows) / len(rows))
    np.testing.assert_allclose(read["entropy"], expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(plain["entropy"], expected, rtol=1e-5, atol=1e-6)
    if fill == "-inf":
        assert read["entropy"].tolist() == plain["entropy"].tolist()
