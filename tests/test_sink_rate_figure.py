"""The per-layer sink-rate figure: Gu et al.'s Sink_1^0.3 beside the argmax-based count,
checked against hand-made pooled values."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np

from attnreport.charts.figures.sink_rate import MEASURES, sink_rate_figure, sink_rate_rows
from attnreport.charts.registry import Inputs, entry_of, place
from attnreport.results import FocusBySentenceTable
from tests.fixtures.fake_results import fake_study, typed


def set_with(first_prob, first_focus, n_queries):
    """Two layers x two heads, one row per (sentence, layer, head) in that order."""
    n = len(first_prob)
    sentence = np.repeat(np.arange(n // 4), 4)
    table = FocusBySentenceTable(
        sentence=sentence,
        layer=np.tile([0, 0, 1, 1], n // 4),
        head=np.tile([0, 1, 0, 1], n // 4),
        self_focus=np.zeros(n),
        first_focus=np.asarray(first_focus, dtype=float),
        concentration=np.zeros(n),
        n_queries=np.asarray(n_queries),
        first_prob=np.asarray(first_prob, dtype=float),
        sink_share=np.zeros(n),
    )
    return replace(typed(fake_study(1)).set, focus_by_sentence=table)


def test_rates_per_layer_pool_sentences_by_their_queries():
    # layer 0: head 0 pools first_prob (0.2*1 + 0.5*3)/4 = 0.425 > 0.3, first_focus (0+1*3)/4 = 0.75
    #          head 1 pools 0.1 and 0.0: a sink by neither measure
    # layer 1: head 0 pools 0.9 with first_focus 0.2 (prob only); head 1 pools 0.25 with 0.6 (argmax only)
    set_results = set_with(
        first_prob=[0.2, 0.1, 0.9, 0.25, 0.5, 0.1, 0.9, 0.25],
        first_focus=[0.0, 0.0, 0.2, 0.6, 1.0, 0.0, 0.2, 0.6],
        n_queries=[1, 1, 1, 1, 3, 3, 3, 3],
    )
    rows = sink_rate_rows(set_results)
    got = {
        (int(layer), str(m)): float(p)
        for layer, m, p in zip(rows["layer"], rows["measure"], rows["percent"], strict=True)
    }
    by_prob, by_argmax = MEASURES
    assert got == {
        (0, by_prob): 50.0,
        (0, by_argmax): 50.0,
        (1, by_prob): 50.0,
        (1, by_argmax): 50.0,
    }
    assert list(rows["sinks"]) == [1, 1, 1, 1] and list(rows["heads"]) == [2, 2, 2, 2]


def test_a_layer_of_sinks_by_both_measures_and_one_of_none():
    set_results = set_with(
        first_prob=[0.31, 0.9, 0.0, 0.3], first_focus=[0.51, 1.0, 0.0, 0.5], n_queries=[4] * 4
    )
    rows = sink_rate_rows(set_results)
    # 0.3 is not above eps, and 0.5 is not more than half: one threshold, one comparison
    assert list(rows["percent"]) == [100.0, 100.0, 0.0, 0.0]


def test_figure_draws_every_row_and_names_both_measures():
    manifest = typed(fake_study(1)).manifest
    fig = sink_rate_figure(set_with([0.5] * 4, [1.0] * 4, [2] * 4), manifest)
    assert fig.key == "set-sink-rate" and "Gu et al." in fig.caption
    assert sorted(set(fig.inline["measure"])) == sorted(MEASURES)
    assert "window" not in fig.caption and "window" not in json.dumps(fig.spec)


def test_windowed_layers_are_shaded_and_named():
    """A model whose layer 1 attends through a 4-token window: the chart has a band over
    layer 1 only (x from 0.5 to 1.5) and the caption names the layer and the width."""
    results = typed(fake_study(1))
    model = replace(results.manifest.model, layer_windows={1: 4})
    manifest = replace(results.manifest, model=model)
    windowed = replace(results, manifest=manifest, set=set_with([0.5] * 4, [1.0] * 4, [2] * 4))
    fig = place(entry_of("set-sink-rate"), Inputs(windowed)).figure  # as the index builds it
    assert "Sliding windows (shaded): layer 1 has a window of 4 tokens" in fig.caption
    longest = max(s.n_tokens for s in manifest.sentences)
    assert ("no window hides a token" in fig.caption) == (longest <= 4), longest
    bands = [layer for layer in fig.spec["layer"] if layer.get("mark", {}).get("type") == "rect"]
    assert len(bands) == 1
    assert bands[0]["data"]["values"] == [{"from": 0.5, "to": 1.5, "layer": 1, "window": 4}]


def test_a_window_longer_than_every_sentence_is_said_to_hide_nothing():
    """Gemma's case: 512-token windows over short sentences mask no key; the caption says
    so with the longest sentence's length, and says nothing of it when a window cuts."""
    results = typed(fake_study(2))
    longest = max(s.n_tokens for s in results.manifest.sentences)
    for size, hides in ((longest, False), (longest - 1, True)):
        model = replace(results.manifest.model, layer_windows={0: size, 1: size})
        manifest = replace(results.manifest, model=model)
        windowed = replace(results, manifest=manifest)
        caption = place(entry_of("set-sink-rate"), Inputs(windowed)).figure.caption
        assert f"have a window of {size} tokens" in caption
        said = f"(the longest has {longest} tokens), so no window hides a token" in caption
        assert said == (not hides), (size, caption)
