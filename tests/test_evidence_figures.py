"""The figures drawn beside the claims (and the massive activations): their rows against
numbers recomputed here from hand-made tables, their specs valid, and each drawn only
when the results hold what it needs."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from attnreport.charts.figures import first_token_bos, massive, split_updates, value_norms
from attnreport.charts.registry import Inputs, entry_of, place
from attnreport.results import tables as rt
from attnreport.results.roles import MassiveBySentenceTable, SetMassiveActivationsTable
from tests.fixtures.fake_results import fake_study, typed

N_SENTENCES, N_LAYERS, N_HEADS = 6, 3, 2
RNG = np.random.default_rng(3)


def _keys():
    return [(s, a, h) for s in range(N_SENTENCES) for a in range(N_LAYERS) for h in range(N_HEADS)]


def _focus(first_update, other_update, first_prob, focus=0.5, n=20):
    keys = _keys()
    col = lambda f: np.array([f(*k) for k in keys], dtype=float)  # noqa: E731
    return rt.FocusBySentenceTable(
        sentence=np.array([k[0] for k in keys]), layer=np.array([k[1] for k in keys]),
        head=np.array([k[2] for k in keys]), self_focus=np.zeros(len(keys)),
        first_focus=np.full(len(keys), focus), concentration=np.zeros(len(keys)),
        n_queries=np.full(len(keys), n), first_prob=col(first_prob),
        sink_share=np.zeros(len(keys)), n_first=np.full(len(keys), n),
        first_update=col(first_update), other_update=col(other_update),
    )  # fmt: skip


def _results(**tables):
    results = typed(fake_study(2, n_layers=N_LAYERS, n_heads=N_HEADS))
    return replace(results, set=replace(results.set, **tables))


def test_split_updates_are_medians_over_heads_then_sentences():
    first = lambda s, a, h: 0.01 * (s + 1) * (h + 1)  # noqa: E731
    focus = _focus(first, lambda s, a, h: 0.1, lambda *k: 0.5)
    rows = split_updates.split_update_rows(
        replace(typed(fake_study(1)).set, focus_by_sentence=focus)
    )
    got = {
        (lay, ser): v
        for lay, ser, v in zip(rows["layer"], rows["series"], rows["value"], strict=True)
    }
    # per sentence the median over the two heads is 0.015 (s + 1); over six sentences 0.0525
    assert got[(0, split_updates.FIRST)] == pytest.approx(
        np.median([0.015 * (s + 1) for s in range(6)])
    )
    assert got[(2, split_updates.OTHER)] == pytest.approx(0.1)
    lows = dict(zip(zip(rows["layer"], rows["series"], strict=True), rows["low"], strict=True))
    assert lows[(0, split_updates.FIRST)] == pytest.approx(0.015)  # six sentences: the range
    results = _results(focus_by_sentence=focus)
    fig = place(entry_of("split-updates"), Inputs(results)).figure
    assert fig.key == "split-updates" and "layers 4 and later" in fig.caption


def test_first_token_bos_draws_both_captures_against_uniform():
    focus = _focus(lambda *k: 0.1, lambda *k: 0.1, lambda s, a, h: 0.6 + 0.01 * h)
    contrast = rt.BosContrastTable(
        sentence=focus.sentence, layer=focus.layer, head=focus.head,
        first_focus=focus.first_focus, n_queries=focus.n_queries,
        first_prob=np.full(len(focus.layer), 0.2), n_first=focus.n_first,
        bos=np.ones(len(focus.layer), dtype=bool),
    )  # fmt: skip
    results = _results(focus_by_sentence=focus, bos_contrast=contrast)
    rows = first_token_bos.first_token_bos_rows(results.set)
    got = {
        (lay, ser): v
        for lay, ser, v in zip(rows["layer"], rows["series"], rows["value"], strict=True)
    }
    assert got[(1, first_token_bos.OWN)] == pytest.approx(0.605)  # median of 0.6 and 0.61
    assert got[(1, first_token_bos.BOS)] == pytest.approx(0.2)
    assert entry_of("first-token-bos").when(Inputs(results))
    old = replace(contrast, first_prob=np.full(len(focus.layer), -1.0))  # before schema 9
    assert not entry_of("first-token-bos").when(Inputs(_results(bos_contrast=old)))
    fig = place(entry_of("first-token-bos"), Inputs(results)).figure
    uniform = [
        layer for layer in fig.spec["layer"] if "data" in layer and "values" in layer["data"]
    ]
    assert any(
        v.get("meaning") == "uniform attention" for lay in uniform for v in lay["data"]["values"]
    )


def test_value_norms_are_the_ratio_per_sentence_and_layer_by_sink_or_control():
    keys = [(s, a) for s in range(N_SENTENCES) for a in range(N_LAYERS)]
    first = RNG.uniform(0.1, 2.0, size=len(keys))
    norms = rt.ValueNormsTable(
        sentence=np.array([k[0] for k in keys]), layer=np.array([k[1] for k in keys]),
        kv_head=np.zeros(len(keys), dtype=int), first_norm=first, other_norm=np.ones(len(keys)),
    )  # fmt: skip
    results = typed(fake_study(1, n_layers=N_LAYERS, n_heads=N_HEADS))
    pooled = results.set.focus_pooled
    value = np.where((pooled.statistic == "first_focus") & (pooled.layer == 2), 0.9, 0.1)
    by_sentence = results.set.focus_by_sentence
    gu = np.where(by_sentence.layer == 1, 0.9, 0.1)  # Gu et al.'s measure: layer 1 sinks
    set_results = replace(
        results.set, value_norms=norms, focus_pooled=replace(pooled, value=value),
        focus_by_sentence=replace(by_sentence, first_prob=gu),
    )  # fmt: skip
    older = replace(
        set_results, focus_by_sentence=replace(by_sentence, first_prob=0 * gu)
    )  # unrecorded
    # the claim's scope: Gu et al.'s measure; without probabilities, the argmax rule (layer 2)
    for results_set, sink in ((set_results, 1), (older, 2)):
        rows = value_norms.value_norm_rows(results_set)
        for layer, series, got in zip(rows["layer"], rows["series"], rows["value"], strict=True):
            want = np.median([first[i] for i, k in enumerate(keys) if k[1] == layer])  # 1 KV head
            assert got == pytest.approx(want, rel=1e-5)  # the table keeps 6 digits
            assert series == (value_norms.SINK if layer == sink else value_norms.OTHER)


def test_massive_activations_mark_the_layers_where_the_first_token_holds_them():
    rows = [
        (lay, s, 0 if lay else s % 2, 7, 100.0 * (lay + 1) + s)
        for lay in range(3)
        for s in range(6)
    ]
    cols = {
        k: np.array([r[i] for r in rows])
        for i, k in enumerate(("layer", "sentence", "position", "dimension", "ratio"))
    }
    by_sentence = MassiveBySentenceTable(**cols, value=cols["ratio"], median=np.ones(len(rows)))
    set_table = SetMassiveActivationsTable(**{k: v[:3] for k, v in by_sentence.arrays().items()})
    results = _results(massive_by_sentence=by_sentence, massive_activations=set_table)
    got = massive.massive_rows(results.set)
    by_layer = {
        lay: (ser, v) for lay, ser, v in zip(got["layer"], got["series"], got["value"], strict=True)
    }
    assert by_layer == {
        0: (massive.ELSEWHERE, pytest.approx(102.5)),  # odd sentences hold it elsewhere
        1: (massive.FIRST, pytest.approx(202.5)),
        2: (massive.FIRST, pytest.approx(302.5)),
    }
    fig = place(entry_of("massive-activations"), Inputs(results)).figure
    assert "in every sentence" in fig.caption
