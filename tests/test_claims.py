"""Claims tested: the verdict rule's known answers and each claim on hand-made results."""

from __future__ import annotations

from dataclasses import replace

from attnreport.site.words import claims, claims_grid
from attnreport.site.words.verdicts import (
    CONTRADICTED,
    INCONCLUSIVE,
    PARTLY,
    RULE,
    SUPPORTED,
    Evidence,
    verdict,
)
from attnreport.site.words.wording import percent
from tests.fixtures.grids import cell, grids
from tests.test_findings import by_sentence


def test_verdict_rule_known_answers():
    assert verdict(Evidence(0.5, n_sentences=6, tested=10)).label == SUPPORTED
    assert verdict(Evidence(0.5, 6, 10, breakers=2)).label == PARTLY
    assert verdict(Evidence(0.5, 6, 10, breakers=5)).label == CONTRADICTED  # half break it
    assert verdict(Evidence(-0.1, 6, 10)).label == CONTRADICTED
    assert verdict(Evidence(0.0, 6, 10)).label == CONTRADICTED
    small = verdict(Evidence(0.5, n_sentences=2, tested=10))
    assert (
        small.label == INCONCLUSIVE
        and "too small to call: 3 sentences needed, 2 here" in small.reason
    )
    assert verdict(Evidence(0.5, 6, 0)).label == INCONCLUSIVE  # nothing tested
    noisy = verdict(Evidence(0.1, 6, 10, spread=0.3))
    assert noisy.label == INCONCLUSIVE and "spread" in noisy.reason
    assert verdict(Evidence(0.3, 6, 10, spread=0.1)).label == SUPPORTED
    # a claim that holds by construction needs one sentence
    assert verdict(Evidence(1.0, 1, 9, needed=1)).label == SUPPORTED
    assert "inconclusive" in RULE and "contradicted" in RULE


def _heads(n_layers=4, n_heads=3, value=lambda lay, h: 0.0):
    return {(lay, h): value(lay, h) for lay in range(n_layers) for h in range(n_heads)}


def test_sink_heads_change_little_true_false_and_too_small():
    first = _heads(value=lambda lay, h: 0.9 if lay >= 2 else 0.1)  # layers 2-3 are sinks
    small = _heads(value=lambda lay, h: 0.02 if lay >= 2 else 0.3)
    c = claims.sink_heads_change_little(first, small, n_sentences=6)
    assert c.verdict.label == SUPPORTED and c.breakers == ""
    one_loud = {**small, (3, 1): 0.5}
    c = claims.sink_heads_change_little(first, one_loud, 6)
    assert c.verdict.label == PARTLY and c.breakers.startswith("layer 3, head 1:")
    loud = _heads(value=lambda lay, h: 0.5 if lay >= 2 else 0.1)
    c = claims.sink_heads_change_little(first, loud, 6)
    assert c.verdict.label == CONTRADICTED and "other way" in c.verdict.reason
    assert claims.sink_heads_change_little(first, small, 2).verdict.label == INCONCLUSIVE


def test_a_breaker_just_above_the_median_reads_larger_than_it():
    """Gemma's case: a sink head at 0.245% of ‖x‖ against a median of 0.238%, which
    ``percent`` writes as 0.2% both."""
    first = _heads(value=lambda lay, h: 0.9 if lay >= 2 else 0.1)
    sizes = _heads(value=lambda lay, h: 0.001 if lay >= 2 else (0.0023, 0.00238, 0.0024)[h])
    c = claims.sink_heads_change_little(first, {**sizes, (2, 0): 0.00245}, n_sentences=6)
    assert percent(0.00245) == percent(0.00238) == "0.2%"
    assert c.breakers == (
        "layer 2, head 0: sink heads whose updates (0.245% of ‖x‖) are larger than the "
        "median of the other heads (0.238%)"
    )


def test_the_evidence_gives_medians_beside_the_means():
    """Gemma-3's case after its post-attention norm: a few very large sink heads carry the
    sink heads' mean past the others' while their median stays below. Both are said, every
    size to the precision that tells the smallest breaker from the others' median (10% and
    9.7%), so the others' 9.7% never also reads as 10%."""
    first = _heads(value=lambda lay, h: 0.9 if lay >= 2 else 0.1)  # 6 sink heads, 6 others
    sizes = _heads(value=lambda lay, h: 0.08 if lay >= 2 else 0.097)
    c = claims.sink_heads_change_little(first, {**sizes, (3, 1): 0.1, (3, 2): 2.9}, 6)
    assert c.verdict.label == CONTRADICTED  # mean 0.55 against 0.097
    assert c.evidence == (
        "The 6 sink heads (the first token is their top key for most queries) write updates "
        "of 55% of ‖x‖ on average (median 8.0%), the other 6 heads 9.7% (median 9.7%)."
    )
    assert c.breakers.endswith(
        "sink heads whose updates (10% to 290% of ‖x‖) are larger than the median of the "
        "other heads (9.7%)"
    )


def test_sink_on_any_first_token():
    sinks = {s: _heads(value=lambda lay, h: 0.95) for s in range(4)}
    c = claims.sink_on_any_first_token(by_sentence(sinks), [10, 11, 12, 13], bos_added=False)
    assert (
        c.verdict.label == SUPPORTED
        and "4 sentences starting with 4 different tokens" in c.evidence
    )
    assert "not captured with a BOS first" in c.evidence
    same = claims.sink_on_any_first_token(by_sentence(sinks), [7, 7, 7, 7], bos_added=False)
    assert same.verdict.label == INCONCLUSIVE  # one first token: nothing varies
    mixed = {**sinks, 3: _heads(value=lambda lay, h: 0.0)}
    c = claims.sink_on_any_first_token(by_sentence(mixed), [10, 11, 12, 13], False)
    # shares 1, 1, 1, 0: the spread (1) is larger than the effect (0.25)
    assert c.verdict.label == INCONCLUSIVE and c.breakers == "sentence 3"


def test_sink_on_any_first_token_with_the_bos_contrast():
    sinks = {s: _heads(value=lambda lay, h: 0.95) for s in range(3)}
    same_start = [7, 7, 7]
    alone = claims.sink_on_any_first_token(by_sentence(sinks), same_start, False)
    assert alone.verdict.label == INCONCLUSIVE  # one first token
    # with the BOS contrast the sink forms on a second, different token: 3 needed, 2 here
    both = claims.sink_on_any_first_token(by_sentence(sinks), same_start, False, by_sentence(sinks))
    assert "the sink moves to the BOS: 100% of heads" in both.evidence
    assert (
        both.verdict.label == INCONCLUSIVE
        and "3 different first tokens needed, 2 here" in both.verdict.reason
    )
    varied = claims.sink_on_any_first_token(
        by_sentence(sinks), [7, 8, 9], False, by_sentence(sinks)
    )
    assert varied.verdict.label == SUPPORTED and "none of 6 tested" in varied.verdict.reason
    no_bos_sink = by_sentence({s: _heads(value=lambda lay, h: 0.1) for s in range(3)})
    c = claims.sink_on_any_first_token(by_sentence(sinks), [7, 8, 9], False, no_bos_sink)
    assert c.verdict.label == CONTRADICTED  # the BOS condition fails: mean share 0
    assert c.breakers.startswith("sentence 0 with a BOS first")


def _uniform(n):
    return [[1 / (i + 1)] * (i + 1) for i in range(n)]


def _peaked(n):
    return [[1.0] + [0.0] * i for i in range(n)]


def _iv(q_maps, v_same, v_next, k_mean):
    base = {"same": [_peaked(4)] * 2, "next": [_peaked(4)] * 2, "last": [_peaked(4)] * 2}
    scaling = [
        cell(t, 1e-10, [0.1] * 4, {"same": q_maps, "next": base["next"], "last": base["last"]})
        for t in "QK"
    ] + [cell("V", 1e-10, [0.3] * 4, {"same": v_same, "next": v_next, "last": base["last"]})]
    mean = [cell("K", s, [0.1] * 4, {"same": k_mean}) for s in (0, 1, 2)]
    return grids(5, scaling, mean, baseline=base, mean_sentences=[0, 1, 2])


def test_intervention_claims_on_hand_made_maps():
    good = _iv([_uniform(4)] * 2, [_peaked(4)] * 2, [_uniform(4)] * 2, [_uniform(4)] * 2)
    qk = claims_grid.qk_scaling_uniform(good)
    assert qk.verdict.label == SUPPORTED and "s = ε q·k" in qk.evidence
    assert "Q and K give the same KL" in qk.evidence
    v = claims_grid.v_scaling_next_layer(good)
    assert v.verdict.label == SUPPORTED and "layer 6's move up to 0.75" in v.evidence
    assert "the layer's own weights do not move at all" in v.evidence
    k = claims_grid.mean_k_structured(good)
    assert k.verdict.label == CONTRADICTED and k.breakers.startswith("sentences 0, 1, 2")
    bad = _iv([_peaked(4), _uniform(4)], [_uniform(4), _peaked(4)], [_peaked(4)] * 2,
              [_peaked(4)] * 2)  # fmt: skip
    qk = claims_grid.qk_scaling_uniform(bad)
    assert qk.verdict.label == PARTLY and qk.breakers.startswith("layer 5, head 0 stay")
    v = claims_grid.v_scaling_next_layer(bad)
    assert v.verdict.label == CONTRADICTED  # the next layer did not move
    assert claims_grid.mean_k_structured(bad).verdict.label == SUPPORTED
    assert claims_grid.tested_claims({}, None, [], False) == []


def test_mean_k_is_tested_on_the_reading_before_the_rotation_when_run():
    iv = _iv([_uniform(4)] * 2, [_peaked(4)] * 2, [_uniform(4)] * 2, [_uniform(4)] * 2)
    assert "not in this run's results" in claims_grid.mean_k_structured(iv).evidence
    before = [cell(t, s, [0.1] * 4, {"same": [_peaked(4)] * 2}) for s in (0, 1, 2) for t in "QK"]
    iv = replace(iv, mean=replace(iv.mean, before_rotation=tuple(before)))
    k = claims_grid.mean_k_structured(iv)
    assert k.verdict.label == SUPPORTED
    assert "so the mean taken before the rotation reproduces the source figure" in k.evidence
    assert "uniform by construction" in k.evidence  # the other reading is still explained
    flat = tuple(replace(c, observations={"same": [_uniform(4)] * 2}) for c in before)
    iv = replace(iv, mean=replace(iv.mean, before_rotation=flat))
    k = claims_grid.mean_k_structured(iv)
    assert k.verdict.label == CONTRADICTED and "neither reading reproduces" in k.evidence


def _norms(first, other, sentences=(0, 1, 2), layers=(0, 1, 2, 3)):
    rows = [(s, lay, h) for s in sentences for lay in layers for h in range(2)]
    return {"sentence": [r[0] for r in rows], "layer": [r[1] for r in rows],
            "kv_head": [r[2] for r in rows],
            "first_norm": [first(r[0], r[1]) for r in rows],
            "other_norm": [other for _ in rows]}  # fmt: skip


def test_sink_values_small_true_false_and_too_small():
    first = _heads(value=lambda lay, h: 0.9 if lay >= 2 else 0.1)  # sink layers 2 and 3
    small = claims.sink_values_small(_norms(lambda s, lay: 0.2, 1.0), first)
    assert small.verdict.label == SUPPORTED and "0.20 times the length" in small.evidence
    one_big = claims.sink_values_small(_norms(lambda s, lay: 2.0 if lay == 3 else 0.2, 1.0), first)
    assert one_big.verdict.label == CONTRADICTED and one_big.breakers.startswith("layer 3")
    big = claims.sink_values_small(_norms(lambda s, lay: 1.5, 1.0), first)
    assert big.verdict.label == CONTRADICTED and "other way" in big.verdict.reason
    few = claims.sink_values_small(_norms(lambda s, lay: 0.2, 1.0, sentences=(0, 1)), first)
    assert few.verdict.label == INCONCLUSIVE
    noisy = claims.sink_values_small(_norms(lambda s, lay: 0.1 + 0.8 * (s == 2), 1.0), first)
    assert noisy.verdict.label == INCONCLUSIVE and "spread" in noisy.verdict.reason
    assert claims.sink_values_small({}, first) is None


def test_sentences_that_all_start_with_the_bos_say_the_claim_is_not_tested_by_them():
    """Gemma's case: a BOS before every sentence, so one first token; the verdict names
    what is missing (different first tokens, not sentences) and the text says why."""
    sinks = {s: _heads(value=lambda lay, h: 0.95 if h else 0.2) for s in range(6)}
    c = claims.sink_on_any_first_token(by_sentence(sinks), [2] * 6, bos_added=True)
    assert c.verdict.label == INCONCLUSIVE
    assert c.verdict.reason == "too small to call: 3 different first tokens needed, 1 here"
    assert c.evidence.startswith("All 6 sentences start with the BOS token the tokenizer puts")
    assert "cannot tell whether the sink follows any first token" in c.evidence
    assert "the share of heads that are sinks is 67%" in c.evidence  # 2 of 3 heads, each
    same = claims.sink_on_any_first_token(by_sentence(sinks), [7] * 6, bos_added=False)
    assert same.evidence.startswith("All 6 sentences start with the same token")
    varied = claims.sink_on_any_first_token(by_sentence(sinks), [1, 2, 3, 4, 5, 6], False)
    assert "6 sentences starting with 6 different tokens: the share" in varied.evidence


def test_v_scaling_at_the_last_attention_layer_is_not_called_contradicted():
    """A hybrid intervened at its last attention layer observes "next" at that layer
    itself: no later attention layer can move, so only the first half is tested."""
    last = _iv([_uniform(4)] * 2, [_peaked(4)] * 2, [_peaked(4)] * 2, [_uniform(4)] * 2)
    last = replace(last, observed_layers={"same": 5, "next": 5, "last": 5})
    v = claims_grid.v_scaling_next_layer(last)
    assert v.verdict.label == INCONCLUSIVE
    assert v.verdict.reason == "no attention layer after layer 5"
    assert "layer 5, the last attention layer: its weights do not move at all;" in v.evidence
    assert "layer 5's move up to" not in v.evidence and v.breakers == ""
    later = replace(last, observed_layers={"same": 5, "next": 6, "last": 7})
    assert claims_grid.v_scaling_next_layer(later).verdict.label == CONTRADICTED
