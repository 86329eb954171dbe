"""Gu et al.'s sink metric on hand-built attention with known answers."""

from __future__ import annotations

import pytest
import torch

from attnreport.analyses import sinks


def causal_uniform(n: int) -> torch.Tensor:
    """(query, key) uniform causal attention: row i gives 1/(i+1) to keys 0..i."""
    mask = torch.ones(n, n).tril()
    return mask / mask.sum(1, keepdim=True)


def sink_head(n: int, share: float) -> torch.Tensor:
    """Row i >= 1 gives ``share`` to token 0 and spreads the rest over keys 1..i."""
    p = torch.zeros(n, n)
    p[0, 0] = 1.0
    for i in range(1, n):
        p[i, 0] = share
        p[i, 1 : i + 1] = (1 - share) / i
    return p


def test_score_of_a_sink_head_and_a_uniform_head():
    probs = torch.stack([sink_head(4, 0.6), causal_uniform(4)])  # (head, query, key)
    scores = sinks.first_token_scores(probs)
    expected_uniform = (1 / 2 + 1 / 3 + 1 / 4) / 3
    assert scores.tolist() == pytest.approx([0.6, expected_uniform], abs=1e-7)  # float32 input
    assert scores.dtype == torch.float64


def test_score_skips_queries_a_window_hides_token_0_from():
    n = 5
    allowed = torch.ones(n, n, dtype=torch.bool).tril() & ~torch.ones(n, n, dtype=torch.bool).tril(
        -2
    )
    p = allowed.double() / allowed.double().sum(1, keepdim=True)  # uniform over a window of 2
    scores = sinks.first_token_scores(p[None], allowed)
    assert scores.tolist() == pytest.approx([0.5])  # only query 1 sees token 0
    assert sinks.first_token_counts(allowed, 1).tolist() == [1]
    per_head = allowed[None].expand(2, n, n).clone()
    per_head[1] = torch.ones(n, n, dtype=torch.bool).tril()  # head 1 has no window
    both = sinks.first_token_scores(torch.stack([p, causal_uniform(n).double()]), per_head)
    assert both[1].item() == pytest.approx(sum(1 / (i + 1) for i in range(1, n)) / (n - 1))


def test_score_of_a_one_token_sentence_is_zero_and_input_unchanged():
    probs = torch.ones(3, 1, 1)
    assert sinks.first_token_scores(probs).tolist() == [0.0, 0.0, 0.0]
    p = torch.stack([sink_head(6, 0.9)])
    before = p.clone()
    sinks.first_token_scores(p)
    assert torch.equal(p, before)


def test_score_rejects_a_non_square_tensor():
    with pytest.raises(ValueError, match="head, query, key"):
        sinks.first_token_scores(torch.ones(2, 3, 4))


def test_score_matches_a_loop_on_random_attention_with_learned_sinks():
    gen = torch.Generator().manual_seed(0)
    n, heads = 7, 3
    logits = torch.randn(heads, n, n, generator=gen).masked_fill(
        ~torch.ones(n, n).tril().bool(), -1e9
    )
    sink_logit = torch.randn(heads, 1, 1, generator=gen).expand(heads, n, 1)
    probs = torch.softmax(torch.cat([logits, sink_logit], -1), -1)[..., :n]  # rows sum < 1
    got = sinks.first_token_scores(probs)
    for h in range(heads):
        expected = sum(probs[h, i, 0].item() for i in range(1, n)) / (n - 1)
        assert got[h].item() == pytest.approx(expected, rel=1e-12)
    triangles = [
        [[probs[h, i, j].item() for j in range(i + 1)] for i in range(n)] for h in range(heads)
    ]
    assert sinks.scores_from_triangles(triangles) == pytest.approx(got.tolist(), rel=1e-6)


def test_triangles_with_masked_keys():
    tri = [[1.0], [0.4, 0.6], [None, 0.5, 0.5]]
    assert sinks.scores_from_triangles([tri, [[1.0]]]) == [0.4, 0.0]


def test_sink_rates_per_layer_and_overall():
    scores = {(0, 0): 0.1, (0, 1): 0.2, (1, 0): 0.9, (1, 1): 0.31, (2, 0): 0.3, (2, 1): 0.5}
    rates = sinks.sink_rates(scores)
    assert rates.by_layer == {0: 0.0, 1: 100.0, 2: 50.0}  # 0.3 itself is not > eps
    assert rates.overall == pytest.approx(50.0)
    assert rates.sinks == ((1, 0), (1, 1), (2, 1)) and rates.n_heads == 6
    assert sinks.sink_rates(scores, eps=0.05).overall == 100.0
    with pytest.raises(ValueError, match="no head"):
        sinks.sink_rates({})


def test_pooled_scores_weight_sentences_by_queries():
    by_sentence = {
        "sentence": [0, 1, 2, 0, 1, 2],
        "layer": [0, 0, 0, 1, 1, 1],
        "head": [0, 0, 0, 0, 0, 0],
        "first_prob": [0.9, 0.1, 0.7, 0.2, 0.2, 0.5],
        "n_queries": [3, 1, 0, 3, 1, 0],
    }
    pooled = sinks.pooled_scores(by_sentence)
    assert pooled == pytest.approx({(0, 0): (0.9 * 3 + 0.1) / 4, (1, 0): 0.2})
    empty = dict(by_sentence, n_queries=[0] * 6)
    assert sinks.pooled_scores(empty) == {(0, 0): 0.0, (1, 0): 0.0}


def test_compare_sinks_names_the_heads_the_measures_disagree_on():
    heads = [(0, 0), (0, 1), (1, 0), (1, 1)]
    scores = dict(zip(heads, [0.6, 0.35, 0.2, 0.1], strict=True))
    focus = dict(zip(heads, [1.0, 0.3, 0.51, 0.0], strict=True))
    table = {
        "layer": [h[0] for h in heads],
        "head": [h[1] for h in heads],
        "first_focus": list(focus.values()),
    }
    assert sinks.head_values(table, "first_focus") == focus
    d = sinks.compare_sinks(scores, focus)
    assert d.both == ((0, 0),)
    assert d.by_probability_only == ((0, 1),)  # mass on token 0, but it rarely wins
    assert d.by_argmax_only == ((1, 0),)  # wins most rows with little mass
    assert d.neither == 1
    assert not sinks.is_argmax_sink(0.5) and sinks.is_argmax_sink(0.51)  # more than half
    with pytest.raises(ValueError, match="same heads"):
        sinks.compare_sinks(scores, {(0, 0): 1.0})
