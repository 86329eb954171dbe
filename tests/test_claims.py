"""Claims tested: the verdict rule's known answers and each declared test on synthetic
tables whose answer is known, including the cases a pooled or unscoped test gets wrong
(a mean carried by a few large heads; layers 0-3, outside the blog's scope)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from attnreport.site.words import claims as registry
from attnreport.site.words import verdicts
from attnreport.site.words.claims import ClaimInputs, blog, construction, mean_k, streaming, values
from attnreport.site.words.claims.maps import locality
from attnreport.site.words.verdicts import (
    CONTRADICTED,
    INCONCLUSIVE,
    SUPPORTED,
    median_interval,
    min_sentences,
    verdict,
)
from tests.fixtures.grids import cell, grids

RNG = np.random.default_rng(7)


# -- the rule ---------------------------------------------------------------------------


def test_the_sign_test_interval_has_its_known_order_statistics():
    """n = 6: [x_(1), x_(6)] covers 1 - 2/64 = 96.9%; n = 5 has no 95% interval; n = 20:
    [x_(6), x_(15)] (the textbook table)."""
    assert min_sentences() == 6
    assert median_interval([3, 1, 2, 6, 5, 4]) == (1, 6)
    assert median_interval(range(5)) is None
    assert median_interval(range(1, 21)) == (6, 15)
    # coverage of the chosen rank, checked by simulation against a skewed distribution
    draws = RNG.exponential(size=(4000, 20))
    covered = [lo <= math.log(2) <= hi for lo, hi in map(median_interval, draws)]
    assert np.mean(covered) >= 0.94


def test_verdict_rule_known_answers():
    assert verdict([0.1, 0.2, 0.3, 0.2, 0.1, 0.4]).label == SUPPORTED
    assert verdict([-0.1, -0.2, -0.3, -0.2, -0.1, -0.4]).label == CONTRADICTED
    mixed = verdict([-0.1, 0.2, 0.3, 0.2, 0.1, 0.4])  # one sentence the other way: n = 6
    assert mixed.label == INCONCLUSIVE and mixed.reason == "the 95% interval includes no effect"
    few = verdict([0.5] * 5)
    assert few.label == INCONCLUSIVE
    assert few.reason == "too few sentences: a 95% interval needs 6, 5 here"
    assert verdict([]).label == INCONCLUSIVE
    big = verdict([0.3] * 15 + [-0.1] * 5)  # 20 sentences, 5 against: still supported
    assert big.label == SUPPORTED and big.median == pytest.approx(0.3)
    assert big.interval == (0.3, 0.3) and big.n == 20
    assert "interval" in verdicts.RULE and "check" in verdicts.RULE


def test_interval_words_give_the_claims_units_in_order():
    v = verdict([0.5, 0.7, 0.6, 0.9, 0.8, 0.4])
    words = verdicts.interval_words(v, lambda e: math.exp(-e))
    assert words == "median 0.52 (95% interval 0.41 to 0.67, 6 sentences)"


def test_an_interval_whose_ends_read_alike_gets_the_digits_that_tell_them_apart():
    """A tight interval over many sentences, written at 2 digits, would read "0.21 to
    0.21" (an interval of no width): the words take the digits that tell its ends apart,
    the median's too, trailing zeros kept, and say so where even 4 digits cannot."""
    tight = verdict([0.2101 + 0.00003 * i for i in range(100)])
    low, high = tight.interval
    assert f"{low:.2g}" == f"{high:.2g}" and f"{low:.3g}" != f"{high:.3g}"  # the case
    assert verdicts.interval_words(tight) == (
        f"median {tight.median:#.3g} (95% interval {low:#.3g} to {high:#.3g}, 100 sentences)"
    )
    wide = verdict([0.2 + 0.0001 * i for i in range(100)])  # 0.2 reads 0.20 beside 0.21
    assert verdicts.interval_words(wide).startswith("median 0.20 (95% interval 0.20 to 0.21,")
    near = verdict([0.21 + 1e-9 * i for i in range(100)])
    assert verdicts.interval_words(near) == (
        "median 0.21 (its 95% interval rounds to 0.21 too, 100 sentences)"
    )
    exact = verdict([1.0] * 10)
    assert (
        verdicts.interval_words(exact) == "median 1.0 (its 95% interval is 1.0 too, 10 sentences)"
    )


# -- the blog's claim -------------------------------------------------------------------


def focus_rows(n_sentences, n_layers, n_heads, first, other, n_queries=40, focus=0.5, **cols):
    """focus_by_sentence columns: ``first(s, layer, head)`` and ``other(...)`` the update
    sizes where the top key is the first token and elsewhere."""
    keys = [(s, a, b) for s in range(n_sentences) for a in range(n_layers) for b in range(n_heads)]
    out = {
        "sentence": np.array([k[0] for k in keys]),
        "layer": np.array([k[1] for k in keys]),
        "head": np.array([k[2] for k in keys]),
        "first_focus": np.full(len(keys), focus),
        "n_queries": np.full(len(keys), n_queries),
        "n_first": np.full(len(keys), n_queries),
        "first_update": np.array([first(*k) for k in keys], dtype=float),
        "other_update": np.array([other(*k) for k in keys], dtype=float),
    }
    out.update({name: np.array([f(*k) for k in keys], dtype=float) for name, f in cols.items()})
    return out


def blog_claim(rows, **model):
    return blog.sink_heads_change_little(ClaimInputs({"focus_by_sentence": rows}, **model))


def test_the_blog_claim_reads_medians_within_heads_not_means():
    """Gemma's case: a few heads write huge updates where they look at the first token,
    so the mean over heads says "larger"; inside the median head it is half the size."""
    huge = lambda s, a, h: 50.0 if h == 0 else 0.05  # noqa: E731
    rows = focus_rows(8, 6, 6, first=huge, other=lambda s, a, h: 0.1 + 0.01 * s)
    in_scope = rows["layer"] >= 4
    assert rows["first_update"][in_scope].mean() > rows["other_update"][in_scope].mean()
    claim = blog_claim(rows)
    assert claim.verdict.label == SUPPORTED
    assert claim.numbers.startswith("update ratio, median 0.")


def test_the_blog_claim_is_tested_in_layers_4_and_later_only():
    """Layers 0-3 write larger updates where they look at the first token; the source's
    claim is about layers 4 and later, where they write less: supported. Turned around,
    contradicted, whatever layers 0-3 do."""
    early_loud = lambda s, a, h: 2.0 if a < 4 else 0.02 * (1 + 0.1 * s)  # noqa: E731
    rows = focus_rows(6, 8, 3, first=early_loud, other=lambda s, a, h: 0.1)
    assert blog_claim(rows).verdict.label == SUPPORTED
    late_loud = lambda s, a, h: 0.01 if a < 4 else 0.3 * (1 + 0.1 * s)  # noqa: E731
    claim = blog_claim(focus_rows(6, 8, 3, first=late_loud, other=lambda s, a, h: 0.1))
    assert claim.verdict.label == CONTRADICTED
    assert "layers 4-7" in claim.evidence


def test_the_blog_claim_names_the_kv_group_that_breaks_it():
    """SmolLM2's case: the three heads of one KV group (layer 5, heads 3-5) write larger
    updates where they look at the first token, in every sentence."""
    loud = lambda s, a, h: 0.4 if (a, h // 3) == (5, 1) else 0.02  # noqa: E731
    claim = blog_claim(focus_rows(6, 6, 6, first=loud, other=lambda s, a, h: 0.1),
                       n_heads=6, n_kv_heads=2)  # fmt: skip
    assert claim.verdict.label == SUPPORTED
    assert claim.breakers.startswith(
        "heads 3-5 of layer 5 (one KV group: they share their keys and values)"
    )


def test_the_blog_claim_counts_only_heads_with_tokens_of_both_kinds():
    rows = focus_rows(6, 6, 2, first=lambda *k: 0.01, other=lambda *k: 0.1, focus=1.0)
    claim = blog_claim(rows)  # every query looks at the first token: nothing to compare
    assert claim.verdict.label == INCONCLUSIVE
    assert claim.verdict.reason == "no sentence has what the test compares"
    few = blog_claim(focus_rows(5, 6, 2, first=lambda *k: 0.01, other=lambda *k: 0.1))
    assert few.verdict.reason == "too few sentences: a 95% interval needs 6, 5 here"


def test_results_before_schema_9_cannot_test_the_blog_claim():
    rows = focus_rows(6, 6, 2, first=lambda *k: -1.0, other=lambda *k: -1.0)
    claim = blog_claim(rows)
    assert claim.verdict.label == INCONCLUSIVE and "schema 9" in claim.verdict.reason


# -- StreamingLLM -----------------------------------------------------------------------


def test_uniform_share_is_the_mean_of_one_over_i_plus_one():
    got = streaming.uniform_share(np.array([0, 1, 3]))
    assert got.tolist() == pytest.approx([0.0, 1 / 2, (1 / 2 + 1 / 3 + 1 / 4) / 3])


def _prob_rows(n_sentences, prob, n_queries=20):
    u = float(streaming.uniform_share(np.array([n_queries]))[0])
    return focus_rows(n_sentences, 4, 2, lambda *k: 0.0, lambda *k: 0.0, n_queries,
                      first_prob=lambda s, a, h: u + prob(s, a, h))  # fmt: skip


def _contrast(rows, with_bos: bool):
    return {**rows, "bos": np.full(len(rows["sentence"]), with_bos)}


def streaming_claim(own, contrast=None, bos_added=False, first_ids=range(8)):
    tables = {"focus_by_sentence": own, "bos_contrast": contrast}
    inputs = ClaimInputs(tables, first_ids=list(first_ids), bos_added=bos_added,
                         n_tokens=[21] * 8)  # fmt: skip
    return streaming.sink_on_any_first_token(inputs)


def test_a_sink_on_either_first_token_supports_streamingllm():
    own = _prob_rows(8, lambda s, a, h: 0.5 if a >= 2 else -0.05)  # layers 0-1 out of scope
    claim = streaming_claim(own, _contrast(_prob_rows(8, lambda *k: 0.6), True))
    assert claim.verdict.label == SUPPORTED
    assert "with the sentence's own first token first (8 different tokens" in claim.evidence
    assert "with the BOS token first, 0.6" in claim.evidence


def test_no_sink_in_one_capture_contradicts_or_leaves_it_open():
    own = _prob_rows(8, lambda *k: 0.5)
    below = _contrast(_prob_rows(8, lambda *k: -0.05), True)  # less than uniform with a BOS
    claim = streaming_claim(own, below)
    assert claim.verdict.label == CONTRADICTED
    assert claim.breakers.startswith("all 8 sentences, where")  # not "sentence 0, ... 4 more"
    level = _contrast(_prob_rows(8, lambda s, a, h: 0.01 * (-1) ** s), True)  # at uniform
    claim = streaming_claim(own, level)
    assert claim.verdict.label == INCONCLUSIVE
    assert claim.breakers.startswith("every other sentence from 1 to 7, where")


def test_a_run_that_adds_a_bos_needs_the_capture_without_it():
    """Gemma's case: every sentence starts with the BOS; without the contrast (results
    before schema 9) position and token are not separated, so nothing is tested; with it, it is."""
    own = _prob_rows(8, lambda *k: 0.5)
    claim = streaming_claim(own, None, bos_added=True)
    assert claim.verdict.label == INCONCLUSIVE and "only with the BOS token" in claim.verdict.reason
    old = {**_contrast(_prob_rows(8, lambda *k: 0.5), True), "first_prob": np.full(64, -1.0)}
    before = streaming_claim(own, old, bos_added=True)
    assert before.verdict.label == INCONCLUSIVE and "predates" in before.verdict.reason
    without = _contrast(_prob_rows(8, lambda *k: 0.3), False)
    claim = streaming_claim(own, without, bos_added=True)
    assert claim.verdict.label == SUPPORTED
    assert "with the BOS token first, 0.5" in claim.evidence


def test_one_capture_does_not_separate_position_from_the_token():
    """Without the second capture every sentence's first token sits at position 0 in the
    only capture: position and identity are confounded, so nothing is tested."""
    claim = streaming_claim(_prob_rows(8, lambda *k: 0.5), None)
    assert claim.verdict.label == INCONCLUSIVE and "not separated" in claim.verdict.reason


# -- Gu et al. --------------------------------------------------------------------------


def _norms(n_sentences, ratio, layers=6, kv=2):
    keys = [(s, a, h) for s in range(n_sentences) for a in range(layers) for h in range(kv)]
    return {
        "sentence": np.array([k[0] for k in keys]),
        "layer": np.array([k[1] for k in keys]),
        "kv_head": np.array([k[2] for k in keys]),
        "first_norm": np.array([ratio(*k) for k in keys], dtype=float),
        "other_norm": np.ones(len(keys)),
    }


def _pooled_first(sink_layers, layers=6, heads=4):
    keys = [(a, h) for a in range(layers) for h in range(heads)]
    return {
        "statistic": ["first_focus"] * len(keys),
        "layer": [a for a, _ in keys],
        "head": [h for _, h in keys],
        "value": [0.9 if a in sink_layers else 0.1 for a, _ in keys],
    }


def values_claim(norms, sink_layers=(2, 3, 4, 5)):
    tables = {"value_norms": norms, "focus_pooled": _pooled_first(sink_layers)}
    return values.sink_values_small(ClaimInputs(tables, n_tokens=[64] * 6))


def test_short_values_in_sink_layers_support_gu_with_the_other_layers_as_control():
    norms = _norms(6, lambda s, a, h: 0.2 + 0.01 * s if a >= 2 else 1.0)
    claim = values_claim(norms)
    assert claim.verdict.label == SUPPORTED
    assert (
        "the 2 other layers, the control: median 1.0 (its 95% interval is 1.0 too" in claim.evidence
    )
    assert claim.numbers.startswith("value-norm ratio, median 0.2")


def test_long_values_in_sink_layers_contradict_gu_and_name_the_layers():
    claim = values_claim(_norms(6, lambda s, a, h: 1.5 if a >= 2 else 0.5))
    assert claim.verdict.label == CONTRADICTED and claim.breakers.startswith("layers 2-5")
    assert values_claim(_norms(6, lambda *k: 0.5), sink_layers=()).verdict.label == INCONCLUSIVE
    every = values_claim(_norms(6, lambda *k: 0.5), sink_layers=range(6))
    assert "no control" in every.evidence


# -- seed 003 and the checks ------------------------------------------------------------


def _diagonal(n, weight=0.8):
    return [[1.0] if i == 0 else [(1 - weight) / i] * i + [weight] for i in range(n)]


def _uniform(n):
    return [[1 / (i + 1)] * (i + 1) for i in range(n)]


def _first_column(n):
    return [[1.0] + [0.0] * i for i in range(n)]


def test_locality_known_answers():
    assert locality(_uniform(5)) == pytest.approx(0.0)
    assert locality(_first_column(5)) == pytest.approx(-1.0)  # as far back as it goes
    assert locality([[1.0], [0.0, 1.0], [0.0, 0.0, 1.0]]) == pytest.approx(1.0)
    windowed = [[1.0], [0.5, 0.5], [None, 0.5, 0.5]]  # query 2 cannot see key 0
    assert locality(windowed) == pytest.approx(0.0)


def _mean_grid(before, n_sentences=6, after=_uniform):
    mean = [cell("K", s, [0.1] * 5, {"same": [after(5)] * 2}) for s in range(n_sentences)]
    rotated = [cell("K", s, [0.1] * 5, {"same": [before(5)] * 2}) for s in range(n_sentences)]
    return grids(3, mean=mean, mean_sentences=range(n_sentences), before_rotation=rotated)


def test_the_mean_k_claim_reads_locality_before_the_rotation():
    inputs = lambda iv: ClaimInputs({}, iv, positional="rope")  # noqa: E731
    assert mean_k.mean_k_structured(inputs(_mean_grid(_diagonal))).verdict.label == SUPPORTED
    flat = mean_k.mean_k_structured(inputs(_mean_grid(_uniform)))
    assert flat.verdict.label == INCONCLUSIVE  # no nearer than uniform: no structure
    column = mean_k.mean_k_structured(inputs(_mean_grid(_first_column)))
    assert column.verdict.label == CONTRADICTED  # a first-token column is not a diagonal band
    three = mean_k.mean_k_structured(inputs(_mean_grid(_diagonal, 3)))
    assert "too few sentences" in three.verdict.reason  # the source's three inputs
    none = mean_k.mean_k_structured(inputs(grids(3, mean=[cell("K", 0, [0.1], {})])))
    assert none.verdict.label == INCONCLUSIVE and "before the rotation" in none.verdict.reason


def _scaled(q_maps, v_same):
    base = {"same": [_first_column(4)] * 2, "next": [_first_column(4)] * 2, "last": []}
    cells = [cell(t, 1e-10, [0.1] * 4, {"same": q_maps}) for t in "QK"]
    cells.append(cell("V", 1e-10, [0.3] * 4, {"same": v_same, "next": [_uniform(4)] * 2}))
    return grids(5, cells, baseline=base)


def test_checks_pass_and_fail_and_are_never_claims():
    good = ClaimInputs({}, _scaled([_uniform(4)] * 2, [_first_column(4)] * 2))
    found = construction.qk_scaling_uniform(good), construction.v_scaling_own_layer(good)
    assert [c.passed for c in found] == [True, True]
    assert "Q and K give the same KL" in found[0].evidence
    assert "do not move at all; layer 6's move up to 0.75" in found[1].evidence
    bad = ClaimInputs({}, _scaled([_first_column(4), _uniform(4)], [_uniform(4)] * 2))
    assert not construction.qk_scaling_uniform(bad).passed
    assert not construction.v_scaling_own_layer(bad).passed
    alibi = ClaimInputs({}, bad.interventions, positional="alibi")  # a bias ε does not scale
    assert construction.qk_scaling_uniform(alibi) is None
    after = ClaimInputs({}, _mean_grid(_diagonal))
    assert construction.mean_k_after_rotation_uniform(after).passed
    assert registry.tested_claims(good) == []  # a check is never listed as a claim
    assert [c.key for c in registry.checks(good)] == ["qk-uniform", "v-own-layer"]


def test_every_claim_is_declared_with_its_scope_and_test():
    rows = focus_rows(6, 6, 2, first=lambda *k: 0.01, other=lambda *k: 0.1,
                      first_prob=lambda *k: 0.9)  # fmt: skip
    tables = {"focus_by_sentence": rows, "value_norms": _norms(6, lambda *k: 0.3),
              "focus_pooled": _pooled_first(range(6)), "bos_contrast": _contrast(rows, True)}  # fmt: skip
    found = registry.tested_claims(ClaimInputs(tables, first_ids=list(range(6)), n_tokens=[50] * 6))
    assert [c.key for c in found] == ["sink-small-update", "sink-any-first-token",
                                      "sink-small-values"]  # fmt: skip
    assert all(c.scope and c.test and c.numbers for c in found)
    assert registry.tested_claims(ClaimInputs({})) == []


def _by_sentence(prob, n_sentences=6, layers=6, heads=4):
    """A ``focus_by_sentence`` table: first_prob(layer, head) in every sentence, 10 queries."""
    keys = [(s, a, h) for s in range(n_sentences) for a in range(layers) for h in range(heads)]
    return {
        "sentence": np.array([k[0] for k in keys]),
        "layer": np.array([k[1] for k in keys]),
        "head": np.array([k[2] for k in keys]),
        "first_prob": np.array([prob(k[1], k[2]) for k in keys], dtype=float),
        "n_queries": np.full(len(keys), 10),
        "n_first": np.full(len(keys), 10),
    }


def test_gu_claim_takes_the_sink_layers_by_gu_measure_where_the_results_allow():
    """By argmax only layers 2-5 are sink layers; by Gu et al.'s measure (more than half
    of the heads above 0.3) layers 1-5 are: 3 of layer 1's 4 heads give the first token
    0.4, and layer 0's 2 of 4 (not more than half) do not make it one. Layer 1's short
    values then count on the sink side, and the control is layer 0 alone (ratio 1)."""

    def prob(a, h):
        return 0.9 if a >= 2 else (0.4 if (a == 1 and h < 3) or (a == 0 and h < 2) else 0.1)

    norms = _norms(6, lambda s, a, h: 0.2 + 0.01 * s if a >= 1 else 1.0)
    tables = {"value_norms": norms, "focus_pooled": _pooled_first((2, 3, 4, 5)),
              "focus_by_sentence": _by_sentence(prob)}  # fmt: skip
    claim = values.sink_values_small(ClaimInputs(tables, n_tokens=[64] * 6))
    assert values.gu_sink_layers(_by_sentence(prob)) == [1, 2, 3, 4, 5]
    assert "by Gu et al.'s own measure" in claim.test
    assert "The 5 sink layers: layers 1-5." in claim.evidence
    assert (
        "In the 1 other layer, the control: median 1.0 (its 95% interval is 1.0 too"
        in claim.evidence
    )
    older = values_claim(norms)  # no first_prob: the argmax rule, said so
    assert "cannot be taken" in older.test and "The 4 sink layers: layers 2-5." in older.evidence


def test_the_sink_layers_are_compared_with_the_control_sentence_by_sentence():
    """Sink layers 0.2 (+0.01 a sentence), the other layers 0.4: the paired ratio is
    0.2/0.4 = 0.5 in the first sentence, recomputed here as exp(-(e_sink - e_other));
    the control is short too, which the page says; longer sink values and equal ratios read
    as such."""
    norms = _norms(6, lambda s, a, h: 0.2 + 0.01 * s if a >= 2 else 0.4)
    claim = values_claim(norms)
    ratios = sorted((0.2 + 0.01 * s) / 0.4 for s in range(6))
    assert (
        "the first token's values are shorter in the sink layers than in the other layers: "
        f"the sink layers' ratio over the control's, median {np.median(ratios):.2f}"
    ) in claim.evidence
    assert "They are short in the other layers too" in claim.evidence
    longer = values_claim(_norms(6, lambda s, a, h: 0.5 + 0.01 * s if a >= 2 else 0.3))
    assert "values are longer in the sink layers than in the other layers" in longer.evidence
    flat = values_claim(_norms(6, lambda s, a, h: 0.3 + 0.01 * s))
    assert "neither shorter nor longer in the sink layers" in flat.evidence
    long_control = values_claim(_norms(6, lambda s, a, h: 0.2 + 0.01 * s if a >= 2 else 1.0))
    assert "They are short in the other layers too" not in long_control.evidence
