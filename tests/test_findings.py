"""Key findings on hand-made results: no sink, a sink in every layer, ties."""

from __future__ import annotations

import pytest

from attnreport.analyses import sinks
from attnreport.site.words import findings as fnd
from attnreport.site.words import readings
from tests.fixtures.grids import cell, effects, grids, scaling_cells
from tests.noise_scan import stated_noise


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
    assert f.text == (
        "No layer has a first-token sink: in no layer do more than half of the heads make "
        "the first token their top key for more than half of their queries."
    )


def test_sink_in_every_layer_and_its_strength_over_sentences():
    first = grid(30, 4, lambda lay, h: 0.95)
    sent = {s: grid(30, 4, lambda lay, h, s=s: 0.9 + 0.01 * s) for s in range(6)}
    f = fnd.sink_onset(first, by_sentence(sent))
    assert f.text.startswith("The first token is an attention sink in every layer: in each,")
    assert f.text.endswith(
        "There the median head makes it the top key for a median 92% (95% interval 90% to "
        "95%, 6 sentences) of its queries."
    )


def test_sink_layers_are_a_band_and_need_more_than_half_of_their_heads():
    first = grid(30, 2, lambda lay, h: 0.9 if 2 <= lay <= 9 or lay >= 12 else 0.2)
    assert fnd.sink_onset(first).text.startswith(
        "The first token is an attention sink in layers 2-9 and 12-29 (26 of 30 layers): in each"
    )
    # layer 0: 2 of 4 heads (not more than half); layer 1: 3 of 4; exactly 0.5 is no sink
    half = {(0, 0): 0.9, (0, 1): 0.9, (0, 2): 0.1, (0, 3): 0.1,
            (1, 0): 0.6, (1, 1): 0.6, (1, 2): 0.6, (1, 3): 0.0,
            (2, 0): 0.5, (2, 1): 0.5, (2, 2): 0.5, (2, 3): 0.5}  # fmt: skip
    assert "sink in layer 1 (1 of 3 layers)" in fnd.sink_onset(half).text


def test_the_strength_over_few_sentences_is_a_range():
    first = grid(3, 2, lambda lay, h: 0.7 if lay == 2 else 0.1)
    sent = {s: grid(3, 2, lambda lay, h, s=s: 0.6 + 0.1 * s if lay == 2 else 0.1) for s in range(3)}
    assert fnd.sink_onset(first, by_sentence(sent)).text.endswith(
        "a median 70% (range 60% to 80% over 3 sentences, too few for a 95% interval) of its "
        "queries."
    )


def _massive(rows):
    keys = ("layer", "sentence", "position", "dimension", "ratio")
    return {k: [r[i] for r in rows] for i, k in enumerate(keys)}


def test_massive_activations_name_the_band_where_the_first_token_holds_them():
    """Layers 2-3 hold the largest activation on the first token in every sentence; in
    layer 1 one sentence has it elsewhere, so layer 1 is out of the band."""
    rows = [(0, s, 3, 5, 4.0) for s in range(6)]
    rows += [(1, s, 0 if s else 2, 64, 90.0) for s in range(6)]
    rows += [(lay, s, 0, 64, 100.0 * (s + 1)) for lay in (2, 3) for s in range(6)]
    f = fnd.massive_activations({"massive_by_sentence": _massive(rows)})
    assert f.key == f.figure == "massive-activations"
    assert (
        "in layers 2-3, the largest residual activation sits on the first token in every "
        "one of the 6 sentences, in dimension 64;" in f.text
    )
    assert f.text.endswith("is a median 350 (95% interval 100 to 600, 6 sentences).")
    older = fnd.massive_activations({"massive_activations": _massive(rows[:6])})
    assert older.text == (
        "In no layer does the largest residual activation sit on the first token over the set."
    )
    assert fnd.massive_activations({}) is None


def test_orientation_counts_heads_past_three_over_root_d():
    """d = 100: the threshold is 0.3; 3 of 4 heads write along the hidden state."""
    impact = {"layer": [0, 0, 1, 1], "head": [0, 1, 0, 1], "orientation": [0.5, 0.31, 0.46, 0.1]}
    f = fnd.orientation(impact, dim=100)
    assert f.key == "orientation" and f.figure == "set-head-impact"
    assert f.text.startswith(
        "Most heads write along the hidden state, 3 of the 4 (mean cosine between update and hidden state over the set's tokens past ±0.3 = 3/√100"
    )
    assert "median 0.39 (quartiles 0.26 to 0.47)" in f.text
    against = fnd.orientation({**impact, "orientation": [-0.5, 0.0, 0.0, 0.0]}, dim=100)
    assert against.text.startswith("0 of the 4 heads write along the hidden state and 1 against it")
    most_and_against = fnd.orientation({**impact, "orientation": [0.5, 0.31, 0.46, -0.4]}, dim=100)
    assert most_and_against.text.startswith(
        "Most heads write along the hidden state, 3 of the 4, and 1 against it (mean cosine"
    )
    assert fnd.orientation(impact, dim=None) is None


def test_intervention_effect_says_every_target_never_the_largest():
    iv = grids(20, scaling_cells({
        ("Q", 0.5): [0.005], ("Q", 1e-10): [0.1, 0.3], ("K", 0.5): [0.005], ("K", 1e-10): [0.3, 0.1],
        ("V", 0.5): [0.001], ("V", 1e-10): [0.012]}),
        [cell("K", 0, [0.2]), cell("V", 0, [0.1]), cell("K", 1, [0.3]), cell("V", 1, [0.3])],
        sentence=3, mean_sentences=[0, 1])  # fmt: skip
    f = fnd.intervention_effect(iv)
    assert f.figure == "scaling-grid" and f.sentence == 3
    assert f.text == (
        "Scaling Q, K or V by 1e-10 in layer 20 moves the next-token distribution of sentence 3, "
        "as the mean KL per position, by Q 0.2 nats, K 0.2 nats and V 0.012 nats. Replacing Q, "
        "K or V by its mean over the token positions moves it, as the mean KL per position "
        "averaged over 2 sentences (in brackets its lowest and highest sentence), by K 0.25 nats "
        "(0.2 to 0.3) and V 0.2 nats (0.1 to 0.3)."
    )
    assert stated_noise(f.text) == []


def test_an_intervention_on_several_sentences_is_averaged_per_sentence_with_its_spread():
    """V x 0.5 on sentence 0 (2 positions, mean 0.1) and sentence 1 (4 positions, mean
    0.3): 0.2, each sentence weighing the same (pooled positions would give 0.23); one run
    that scaled Q or K once reads "Q or K"."""
    iv = grids(20, [cell("V", 0.5, [0.0, 0.2], sentence=0), cell("V", 0.5, [0.3] * 4, sentence=1),
                    cell("QK", 0.5, [0.01], sentence=0), cell("QK", 0.5, [0.03], sentence=1)])  # fmt: skip
    assert fnd.intervention_effect(iv).text == (
        "Scaling Q, K or V by 0.5 in layer 20 moves the next-token distribution, as the mean "
        "KL per position averaged over 2 sentences (in brackets its lowest and highest "
        "sentence), by Q or K 0.02 nats (0.01 to 0.03) and V 0.2 nats (0.1 to 0.3)."
    )
    quiet = grids(20, [cell("QK", 0.5, [0.5], sentence=0), cell("V", 0.5, [0.1], sentence=0)])
    assert "by Q or K 0.5 nats and V 0.1 nats." in fnd.intervention_effect(quiet).text


def test_intervention_ties_across_epsilons_go_to_the_milder_one():
    """The prose and alt text name the largest effect of the grid (``top_scaling``): a tie
    across epsilons goes to the milder one."""
    from attnreport.site.words.effects import top_scaling

    found = effects(scaling_cells({("V", 0.5): [1.0], ("V", 1e-3): [1.0]}))
    targets, eps, kl = top_scaling(found)
    assert (targets, eps, kl.mean) == (("V",), 0.5, 1.0)


def test_interventions_that_change_nothing_or_are_missing():
    iv = grids(4, scaling_cells({("Q", 0.5): [0.0], ("V", 0.5): [0.0, 0.0]}))
    assert fnd.intervention_effect(iv).text == (
        "Scaling Q, K or V in layer 4 left the next-token distribution unchanged within float32 "
        "(a KL under 1e-6 nats at every scale factor)."
    )
    assert fnd.intervention_effect(None) is None
    assert fnd.intervention_effect(grids(1)) is None


def test_a_kl_below_float32_precision_reads_zero():
    iv = grids(4, scaling_cells({("Q", 1e-10): [1e-9], ("V", 1e-10): [0.3]}))
    text = fnd.intervention_effect(iv).text
    assert "by Q 0 within float32 (under 1e-6 nats) and V 0.3 nats." in text
    assert stated_noise(text) == []


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


def test_the_sink_rate_says_what_it_rests_on_and_whether_gu_would_count_it():
    """Over sentences of 5 and 70 tokens (n_queries 4 and 69), two heads each."""
    by_sentence = {"sentence": [0, 0, 1, 1], "layer": [0, 0, 0, 0], "head": [0, 1, 0, 1],
                   "n_queries": [4, 4, 69, 69]}  # fmt: skip
    basis = sinks.rate_basis(by_sentence)
    assert basis == sinks.RateBasis(sentences=2, shortest=5, longest=70, short=1,
                                    queries=73, heads=2)  # fmt: skip
    text = fnd.sink_rate({(0, 0): 0.9, (0, 1): 0.1}, {(0, 0): 0.9, (0, 1): 0.1}, basis).text
    assert text.endswith(
        " Both are taken over 2 sentences of 5-70 tokens (73 queries, 2 heads); Gu et al. "
        "measure on inputs of 64 tokens and 1 sentence here is shorter, where the first token "
        "takes a larger share by position alone, so the rate is not theirs to compare with."
    )
    long = sinks.rate_basis({**by_sentence, "n_queries": [63, 63, 69, 69]})
    assert fnd.rate_basis_words(long) == (
        "over 2 sentences of 64-70 tokens (132 queries, 2 heads): each at least the 64 tokens "
        "Gu et al. measure on"
    )


def test_key_findings_in_order_and_with_first_prob():
    sent = {s: grid(3, 2, lambda lay, h: 0.95 if lay else 0.1) for s in range(2)}
    cols = by_sentence(sent, first_prob=[0.7 if i % 6 >= 2 else 0.05 for i in range(12)])
    tables = {
        "focus_by_sentence": {"columns": cols},
        "focus_pooled": pooled(
            {"first_focus": sent[0], "self_focus": grid(3, 2, lambda lay, h: 0.0)}
        ),
        "impact_pooled": {"columns": {"layer": [0, 1, 2], "head": [0, 0, 0],
                                      "magnitude": [0.1, 0.2, 0.3], "orientation": [0.0] * 3}},
    }  # fmt: skip
    found = fnd.key_findings(tables, None, dim=64)
    assert [f.key for f in found] == ["sink-onset", "orientation"]
    assert [f.key for f in found[0].more] == ["sink-rate"]  # both measures of the sinks
    rate = found[0].more[0]
    assert "67% of heads are sinks, and every head of layers 1-2 is one" in rate.text
    assert "agrees on every head. Both are taken over " in rate.text  # and what on
    without = {k: v for k, v in tables.items() if k != "focus_by_sentence"}
    assert [f.key for f in fnd.key_findings(without, None)] == ["sink-onset"]
    assert fnd.key_findings({}, None) == []
    assert all(stated_noise(f.text) == [] for f in (*found, rate))


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


def test_orientation_before_a_post_attention_norm_says_so():
    impact = {"layer": [0, 1], "head": [0, 0], "orientation": [0.5, 0.4]}
    plain = fnd.orientation(impact, 100).text
    normed = fnd.orientation(impact, 100, before_norm=True).text
    assert normed.startswith(plain) and "before the model's post-attention norm" in normed
