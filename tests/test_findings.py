"""Key findings on hand-made results: no sink, a sink in every layer, ties."""

from __future__ import annotations

import pytest

from attnreport.site.words import findings as fnd
from attnreport.site.words import readings
from tests.fixtures.grids import cell, effects, grids, scaling_cells


def by_sentence(values: dict[int, dict[tuple[int, int], float]], n_queries: int = 5, **extra):
    """focus_by_sentence columns from ``{sentence: {(layer, head): first_focus}}``."""
    rows = [(s, lh, v) for s, heads in values.items() for lh, v in sorted(heads.items())]
    cols = {
        "sentence": [s for s, _, _ in rows],
        "layer": [lh[0] for _, lh, _ in rows],
        "head": [lh[1] for _, lh, _ in rows],
        "first_focus": [v for _, _, v in rows],
        "self_focus": [0.0 for _ in rows],
        "n_queries": [n_queries for _ in rows],
    }
    for name, column in extra.items():
        cols[name] = column
    return cols


def pooled(stats: dict[str, dict[tuple[int, int], float]]):
    """focus_pooled (long) columns wrapped as the results file holds them."""
    rows = [(s, lh, v) for s, heads in stats.items() for lh, v in sorted(heads.items())]
    return {"columns": {"statistic": [s for s, _, _ in rows], "layer": [lh[0] for _, lh, _ in rows],
                        "head": [lh[1] for _, lh, _ in rows], "value": [v for _, _, v in rows]}}  # fmt: skip


def grid(n_layers: int, n_heads: int, value) -> dict[tuple[int, int], float]:
    return {(lay, h): value(lay, h) for lay in range(n_layers) for h in range(n_heads)}


def test_per_head_reads_long_and_wide_tables():
    long = pooled(
        {"first_focus": {(0, 0): 0.2, (0, 1): 0.4}, "self_focus": {(0, 0): 0.1, (0, 1): 0.0}}
    )
    assert readings.per_head(long, "first_focus") == {(0, 0): 0.2, (0, 1): 0.4}
    wide = {"layer": [1], "head": [2], "magnitude": [0.5]}
    assert readings.per_head(wide, "magnitude") == {(1, 2): 0.5}
    assert readings.per_head(None, "magnitude") == {}


def test_no_sink():
    f = fnd.sink_onset(grid(4, 3, lambda lay, h: 0.1 * h))
    assert f.key == "sink-onset" and f.figure == "set-first-focus" and f.sentence is None
    assert f.text.startswith("No layer has a first-token sink")
    assert "layer 0, head 2, does so for 20% of queries" in f.text  # tie: lowest layer


def test_sink_in_every_layer():
    f = fnd.sink_onset(grid(30, 4, lambda lay, h: 0.95 if lay != 6 else 1.0))
    assert f.text.startswith(
        "The first token is an attention sink from the first layer on: in all 30 layers"
    )
    assert "strongest in layer 6, whose heads send 100% of queries" in f.text


def test_sink_starts_later_with_a_gap():
    first = grid(30, 2, lambda lay, h: 0.9 if 2 <= lay <= 9 or lay >= 12 else 0.2)
    first[(20, 0)] = 0.996
    first[(20, 1)] = 0.998
    f = fnd.sink_onset(first)
    assert f.text.startswith(
        "An attention sink on the first token appears in layer 2: in layers 2-9 and 12-29,"
    )
    assert "layer 20, whose heads send 99.7% of queries" in f.text


def test_sink_layer_needs_more_than_half_of_its_heads():
    # layer 0: 2 of 4 heads (not most); layer 1: 3 of 4
    first = {
        (0, 0): 0.9,
        (0, 1): 0.9,
        (0, 2): 0.1,
        (0, 3): 0.1,
        (1, 0): 0.6,
        (1, 1): 0.6,
        (1, 2): 0.6,
        (1, 3): 0.0,
    }
    assert "appears in layer 1: in layer 1," in fnd.sink_onset(first).text


def test_sink_strength_ties_go_to_the_lower_layer():
    f = fnd.sink_onset(grid(3, 2, lambda lay, h: 0.8))
    assert "strongest in layer 0," in f.text


def test_heads_that_are_sinks_in_every_sentence():
    sent = {
        s: grid(2, 3, lambda lay, h: 0.95 if (lay, h) in ((0, 1), (1, 0), (1, 2)) else 0.5)
        for s in range(3)
    }
    sent[2][(1, 2)] = 0.89  # one sentence below 90%: not a sink in every sentence
    sent[1][(0, 1)] = 0.9  # exactly the threshold counts
    f = fnd.persistent_sinks(by_sentence(sent))
    assert f.text == (
        "2 heads are sinks in every one of the 3 sentences (the first token is the top key for at "
        "least 90% of queries in each): head 1 of layer 0 and head 0 of layer 1."
    )


def test_one_head_in_one_sentence_and_one_token_sentences_ignored():
    sent = {0: {(0, 0): 1.0, (0, 1): 0.2}}
    cols = by_sentence(sent)
    one_token = by_sentence({1: {(0, 0): 0.0, (0, 1): 0.0}}, n_queries=0)
    both = {k: cols[k] + one_token[k] for k in cols}
    f = fnd.persistent_sinks(both)
    assert f.text.startswith("1 head is a sink in the one sentence (") and f.text.endswith(
        ": head 0 of layer 0."
    )


def test_no_head_is_a_sink_everywhere_and_many_are_summarised():
    none = fnd.persistent_sinks(by_sentence({0: grid(2, 2, lambda lay, h: 0.5)}))
    assert none.text.startswith("No head is a first-token sink in the one sentence")
    many = fnd.persistent_sinks(
        by_sentence({0: grid(10, 2, lambda lay, h: 0.95 if lay % 3 else 0.0)})
    )
    assert "12 heads are sinks" in many.text and many.text.endswith(
        "in each), in layers 1-2, 4-5 and 7-8."
    )


def test_self_focus_heads():
    none = fnd.self_focus_heads(grid(2, 2, lambda lay, h: 0.0))
    assert (
        none.text == "No head ever makes a token its own top key."
        and none.figure == "set-self-focus"
    )
    weak = fnd.self_focus_heads(grid(2, 2, lambda lay, h: 0.1 * (lay + h)))
    assert "layer 1, head 1, makes it the top key for 20% of queries" in weak.text
    one = fnd.self_focus_heads({(0, 0): 0.2, (3, 1): 0.996})
    assert one.text == ("One head attends mostly to the current token: layer 3, head 1 makes the "
                        "query token its own top key for 99.6% of queries.")  # fmt: skip
    tie = fnd.self_focus_heads({(2, 0): 0.8, (1, 3): 0.8, (1, 1): 0.8})
    assert tie.text.startswith(
        "3 heads attend mostly to the current token (heads 1 and 3 of layer 1 and"
    )
    assert "the strongest, layer 1, head 1," in tie.text


def test_impact_peak():
    impact = {
        "layer": [0, 0, 1, 1, 2, 2],
        "head": [0, 1] * 3,
        "magnitude": [0.2, 0.3, 0.02, 0.04, 1.1, 1.0],
    }
    f = fnd.impact_peak(impact)
    assert f.figure == "set-head-impact"
    assert f.text == ("Heads change the hidden state most in layer 2: a head's update there is on "
                      "average 1.05 times the size of the hidden state, against 3% in layer 1.")  # fmt: skip
    flat = fnd.impact_peak({"layer": [0, 1], "head": [0, 0], "magnitude": [0.5, 0.5]})
    assert flat.text == (
        "Heads change the hidden state equally in every layer: each update is 50% of the size "
        "of the hidden state."
    )
    one = fnd.impact_peak({"layer": [0], "head": [0], "magnitude": [0.999]})
    assert one.text.endswith(
        "most in layer 0: a head's update there is on average about the size of the hidden state."
    )
    assert fnd.impact_peak(None) is None


def test_intervention_effect_names_target_epsilon_and_kl_with_q_k_ties():
    iv = grids(20, scaling_cells({
        ("Q", 0.5): [0.005], ("Q", 1e-10): [0.1, 0.3], ("K", 0.5): [0.005], ("K", 1e-10): [0.3, 0.1],
        ("V", 0.5): [0.001], ("V", 1e-10): [0.012]}),
        [cell("K", 0, [0.2]), cell("V", 0, [0.1]), cell("K", 1, [0.3]), cell("V", 1, [0.3])],
        sentence=3)  # fmt: skip
    f = fnd.intervention_effect(iv)
    assert f.figure == "scaling-grid" and f.sentence == 3
    assert f.text == (
        "Of the interventions that scale Q, K or V in layer 20, scaling Q or K by 1e-10 (the same "
        "change: both scale every score) moves the next-token distribution most: a KL "
        "divergence of 0.2 nats per position; scaling V moves it at most 0.012 nats per "
        "position. Of the replacements by the mean over the token positions, replacing K moves "
        "it most: 0.25 nats per position, the mean over 2 sentences (0.2 to 0.3)."
    )


def test_an_intervention_on_several_sentences_is_averaged_per_sentence_with_its_spread():
    """V x 0.5 on sentence 0 (2 positions, mean 0.1) and sentence 1 (4 positions, mean
    0.3): 0.2, each sentence weighing the same (pooled positions would give 0.23); one run
    that scaled Q or K once reads "Q or K"."""
    iv = grids(20, [cell("V", 0.5, [0.0, 0.2], sentence=0), cell("V", 0.5, [0.3] * 4, sentence=1),
                    cell("QK", 0.5, [0.01], sentence=0), cell("QK", 0.5, [0.03], sentence=1)])  # fmt: skip
    assert fnd.intervention_effect(iv).text == (
        "Of the interventions that scale Q, K or V in layer 20, scaling V by 0.5 moves the "
        "next-token distribution most: a KL divergence of 0.2 nats per position, the mean over "
        "2 sentences (0.1 to 0.3)."
    )
    quiet = grids(20, [cell("QK", 0.5, [0.5], sentence=0), cell("V", 0.5, [0.1], sentence=0)])
    assert "scaling Q or K by 0.5 moves" in fnd.intervention_effect(quiet).text


def test_intervention_ties_across_epsilons_go_to_the_milder_one():
    iv = grids(1, scaling_cells({("V", 0.5): [1.0], ("V", 1e-3): [1.0]}))
    text = fnd.intervention_effect(iv).text
    assert "scaling V by 0.5 moves" in text
    assert "scaling V moves it at most" not in text  # V is the top target: said once


def test_interventions_that_change_nothing_or_are_missing():
    iv = grids(4, scaling_cells({("Q", 0.5): [0.0], ("V", 0.5): [0.0, 0.0]}))
    assert fnd.intervention_effect(iv).text == (
        "Scaling Q, K or V in layer 4 left the next-token distribution unchanged within float32 "
        "(a KL under 1e-6 nats at every scale factor)."
    )
    assert fnd.intervention_effect(None) is None
    assert fnd.intervention_effect(grids(1)) is None


def test_sink_rate_and_disagreement():
    prob = {(0, 0): 0.1, (0, 1): 0.2, (1, 0): 0.9, (1, 1): 0.4}
    focus = {(0, 0): 0.6, (0, 1): 0.1, (1, 0): 1.0, (1, 1): 0.3}
    f = fnd.sink_rate(prob, focus)
    assert f.text == (
        "By the literature's measure (a head is a sink when the first token gets more than 0.3 of its "
        "attention on average), 50% of heads are sinks, and every head of layer 1 is one. The argmax "
        "measure disagrees on 2 heads: 1 head (layer 1, head 1) gives the first token that much "
        "probability without making it the top key for most queries and 1 head (layer 0, head 0) "
        "makes it the top key for most queries with less probability."
    )
    agree = fnd.sink_rate({(0, 0): 0.9}, {(0, 0): 0.9})
    assert agree.text.endswith(
        "The argmax measure (top key for most queries) agrees on every head."
    )
    assert fnd.sink_rate({}, {}) is None


def test_key_findings_in_order_and_with_first_prob():
    sent = {s: grid(3, 2, lambda lay, h: 0.95 if lay else 0.1) for s in range(2)}
    cols = by_sentence(sent, first_prob=[0.7 if i % 6 >= 2 else 0.05 for i in range(12)])
    tables = {
        "focus_by_sentence": {"columns": cols},
        "focus_pooled": pooled(
            {"first_focus": sent[0], "self_focus": grid(3, 2, lambda lay, h: 0.0)}
        ),
        "impact_pooled": {
            "columns": {"layer": [0, 1, 2], "head": [0, 0, 0], "magnitude": [0.1, 0.2, 0.3]}
        },
    }
    keys = [f.key for f in fnd.key_findings(tables, None)]
    assert keys == ["sink-onset", "sink-rate", "sinks-every-sentence", "self-focus", "impact-peak"]
    rate = fnd.key_findings(tables, None)[1]
    assert "67% of heads are sinks, and every head of layers 1-2 is one" in rate.text
    assert rate.text.endswith("agrees on every head.")
    without = {k: v for k, v in tables.items() if k != "focus_by_sentence"}
    assert [f.key for f in fnd.key_findings(without, None)] == [
        "sink-onset",
        "self-focus",
        "impact-peak",
    ]
    assert fnd.key_findings({}, None) == []


@pytest.mark.parametrize("n_sentences", [1, 4])
def test_every_finding_names_a_figure_key(n_sentences):
    sent = {s: grid(2, 2, lambda lay, h: 0.5 + 0.1 * h) for s in range(n_sentences)}
    tables = {"focus_by_sentence": by_sentence(sent),
              "focus_pooled": pooled({"first_focus": sent[0], "self_focus": sent[0]})}  # fmt: skip
    for f in fnd.key_findings(tables, None):
        assert f.figure.startswith("set-") and f.text.endswith(".")


def test_figure_links_point_at_the_index_figure_or_the_sentence_page():
    from attnreport.site.context import FigureContext, FigureFiles
    from attnreport.site.highlights import figure_link

    fig = FigureContext(2, "set-first-focus", "figure-2", "t", "c", FigureFiles("{}", "data.json"))
    on_index = readings.Finding("sink-onset", "x.", "set-first-focus")
    assert figure_link(on_index, [fig], ["s0.html"]).href == "#figure-2"
    assert figure_link(readings.Finding("k", "x.", "set-head-impact"), [fig], []) is None
    grid = readings.Finding("interventions", "x.", "scaling-grid", 1)
    link = figure_link(grid, [fig], ["s0.html", "s1.html"])
    assert link.href == "s1.html#ar-chart-scaling-grid" and "sentence 1" in link.label
    assert figure_link(grid, [fig], ["s0.html"]) is None


def test_sink_strength_carries_its_spread_across_sentences():
    sent = {s: grid(3, 2, lambda lay, h, s=s: 0.6 + 0.1 * s if lay == 2 else 0.1) for s in range(3)}
    first = grid(3, 2, lambda lay, h: 0.7 if lay == 2 else 0.1)
    f = fnd.sink_onset(first, by_sentence(sent))
    assert f.text.endswith(
        "send 70% of queries to it on average (range 60% to 80% over 3 sentences)."
    )
    six = {s: grid(3, 2, lambda lay, h, s=s: 0.5 + 0.05 * s if lay == 2 else 0.1) for s in range(6)}
    assert "95% bootstrap interval of the mean" in fnd.sink_onset(first, by_sentence(six)).text


def test_a_post_attention_norm_undoing_a_scaling_of_v_is_said_with_its_numbers():
    """Gemma's case: V x 0.5 moves the output by 1.4e-8 nats, V x 1e-10 by 0.33 (the norm
    rescales the block's output until its epsilon matters); said only with the norm."""
    cells = scaling_cells({("Q", 0.5): [0.01], ("Q", 1e-10): [0.13], ("V", 0.5): [1.4e-8],
                           ("V", 1e-3): [0.0019], ("V", 1e-10): [0.33]})  # fmt: skip
    iv = grids(14, cells)
    said = fnd.intervention_effect(iv, post_norm=True).text
    # 1.4e-8 nats is float32 round-off (issue 39: a recomputation gives 3.4e-8)
    assert "Scaling V by 0.5 leaves it unchanged within float32 (a KL under 1e-6 nats)" in said
    assert (
        "; at 0.001 it is 0.0019 nats per position, at 1e-10 it is 0.33 nats per position." in said
    )
    assert "post-attention norm" not in fnd.intervention_effect(iv).text
    moved = scaling_cells({("V", 0.5): [0.12], ("V", 1e-10): [0.35]})  # SmolLM2: no norm
    assert fnd.v_undone(effects(moved)) == ""
    assert fnd.v_undone(effects(scaling_cells({("V", 0.5): [0.01], ("V", 1e-10): [0.5]}))) == ""
    assert fnd.v_undone(effects(scaling_cells({("V", 0.5): [0.004], ("V", 1e-10): [0.5]}))) != ""


def test_update_sizes_before_a_post_attention_norm_say_what_they_compare():
    impact = {"layer": [0, 0, 1, 1], "head": [0, 1, 0, 1], "magnitude": [2.5, 2.9, 0.01, 0.02]}
    plain = fnd.impact_peak(impact).text
    normed = fnd.impact_peak(impact, before_norm=True).text
    assert normed.startswith(plain) and "before the model's post-attention norm" in normed
    assert "post-attention" not in plain
