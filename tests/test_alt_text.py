"""Alt text computed from the data, for every figure the chart builders make."""

from __future__ import annotations

from attnreport import charts
from attnreport.charts.registry import FIGURES, entry_of
from attnreport.results.types import sentence_tables, set_tables
from attnreport.site.words.alt_text import AltData
from tests.fixtures.fake_results import fake_study, typed
from tests.fixtures.grids import cell, grids

ALT = [e.key for e in FIGURES if e.alt]  # the figures whose entries give an alt text


def alt_text(key, data):
    """The alt text figure ``key``'s registry entry computes from ``data``."""
    return entry_of(key).alt(data)


def sentence(**tables):
    """A 5-token sentence's tables (plain columns) as ``AltData`` keywords."""
    return {"n_tokens": 5, "tables": {k: {"columns": v} for k, v in tables.items()}}


def test_every_figure_of_a_study_has_alt_text_from_its_data():
    results = typed(fake_study(3))
    iv = results.interventions
    typed_sentences = results.sentences
    keys = [
        f.key
        for f in charts.sentence_figures(
            typed_sentences[0], results.interventions, results.manifest, typed_sentences
        )
    ]
    keys += [f.key for f in charts.index_figures(results.set, results.manifest, typed_sentences)]
    assert set(keys) <= set(ALT), set(keys) - set(ALT)
    tables = set_tables(results.set)  # the typed tables, as a page reads them
    first, second = typed_sentences[0], typed_sentences[1]
    data = AltData(sentence_tables(first), first.n_tokens, tables, iv, (1, 2))
    other = AltData(sentence_tables(second), second.n_tokens, tables, iv, (1, 2))
    for key in keys:
        text = alt_text(key, data)
        assert text.endswith(".") and len(text) < 600 and "{" not in text, (key, text)
    # sentence figures describe the sentence they draw
    changed = [
        k for k in keys if not k.startswith("set-") and alt_text(k, data) != alt_text(k, other)
    ]
    assert {"attention-map", "first-focus", "update-magnitude"} <= set(changed)


def test_attention_map_counts_first_and_self_top_targets_over_queries_from_1():
    top = {"layer": [0] * 5 + [1] * 5, "head": [0] * 10, "query": list(range(5)) * 2,
           "top_is_first": [1, 1, 1, 0, 0] + [0] * 5, "top_is_self": [1, 0, 0, 1, 1] + [1] * 5}  # fmt: skip
    text = alt_text("attention-map", AltData(**sentence(top=top), view=(0, 0)))
    assert text.startswith(
        "Heat map of the attention scores of layer 0, head 0 over the sentence's 5 tokens"
    )
    assert text.endswith(
        "The first token is the top target for 50% of tokens and the token itself for 50%."
    )
    assert "for 0% of tokens and the token itself for 100%" in alt_text(
        "attention-map", AltData(**sentence(top=top), view=(1, 0))
    )


def test_breakdown_names_the_term_that_wins_most_rows():
    rows = {"layer": [0] * 4, "head": [0] * 4, "rank": [0] * 4, "position": [0.1, -3.0, 0.1, 0.1],
            "bias": [0.0] * 4, "content": [2.0, 1.0, -2.5, 0.5], "query_only": [0.0] * 4}  # fmt: skip
    text = alt_text("attention-breakdown", AltData(**sentence(breakdown=rows)))
    assert text.endswith("The content term is the largest for 75% of tokens.")
    bias = alt_text("bias-vs-position", AltData(**sentence(breakdown=rows)))
    assert bias.endswith("the bias term is 0 throughout and the position term runs from -3 to 0.1.")
    assert bias.startswith("One line against the current token: the position term")  # not drawn


def test_focus_lines_name_peak_layer_and_highest_head():
    focus = {"layer": [0, 0, 1, 1], "head": [0, 1, 0, 1], "first_focus": [0.2, 0.4, 0.9, 0.7],
             "self_focus": [0.0] * 4, "concentration": [0.5, 0.95, 0.1, 0.1]}  # fmt: skip
    text = alt_text("first-focus", AltData(**sentence(focus=focus)))
    assert "across 2 layers in this sentence" in text
    assert text.endswith("peaks in layer 1 at 80%; the highest head is layer 1, head 0 at 90%.")
    conc = alt_text("concentration", AltData(**sentence(focus=focus)))
    assert (
        "layer 0 at a lead of 72 percentage points" in conc
        and "layer 0, head 1 at a lead of 95" in conc
    )


def test_set_focus_reads_the_pooled_long_table():
    pooled = {
        "columns": {
            "statistic": ["self_focus"] * 2,
            "layer": [0, 1],
            "head": [0, 0],
            "value": [0.1, 0.6],
        }
    }
    text = alt_text("set-self-focus", AltData(set_tables={"focus_pooled": pooled}))
    assert "pooled over the sentence set" in text and "peaks in layer 1 at 60%" in text


def test_impact_figures():
    head_impact = {"layer": [2] * 4 + [0] * 2, "head": [0, 0, 1, 1, 0, 1], "query": [0, 1] * 3,
                   "magnitude": [0.1, 0.3, 1.5, 1.1, 9.0, 9.0], "orientation": [-0.5, 0.1, 0.2, 0.4, 1, 1]}  # fmt: skip
    data = AltData(**sentence(head_impact=head_impact), view=(2, 0))
    assert alt_text("update-magnitude", data).endswith(
        "Head 1 writes the largest updates: 1.3 times the size of the hidden state on average."
    )
    assert alt_text("update-orientation", data).endswith("run from -0.2 (head 0) to 0.3 (head 1).")
    assert "25% of the points lie below zero" in alt_text("orientation-vs-magnitude", data)
    block = {"layer": [0, 0, 1, 1], "query": [0, 1, 0, 1], "magnitude": [0.2, 0.4, 1.0, 1.004]}
    assert alt_text("impact-by-position", AltData(**sentence(block_impact=block))).endswith(
        "Layer 1 changes it most: about the size of the hidden state on average."
    )
    long = {"layer": [0] * 130, "query": list(range(130)), "magnitude": [0.5] * 130}
    assert "It shows positions 0-127 of 130. Layer 0 changes" in alt_text(
        "impact-by-position", AltData(**sentence(block_impact=long))
    )
    pooled = {"layer": [0, 0], "head": [0, 1], "magnitude": [0.2, 0.4], "orientation": [0, 0]}
    assert alt_text("set-head-impact", AltData(set_tables={"impact_pooled": pooled})).endswith(
        "from layer 0, head 1: 40% of the size of the hidden state."
    )


def test_intervention_grids():
    cells = [cell(t, e, [kl]) for t, e, kl in [("Q", 0.5, 0.1), ("K", 0.5, 0.1), ("V", 0.5, 0.3)]]
    mean = [cell("V", 2, [0.5, 0.7]), cell("K", 2, [0.5, 0.6])]
    iv = grids(3, cells, mean, epsilons=[0.5], mean_sentences=[0, 2])
    text = alt_text("scaling-grid", AltData(interventions=iv))
    assert text.startswith(
        "Grid of attention maps of layer 3, one head at a time: rows Q, K and V, each scaled by 0.5."
    )
    assert text.endswith("comes from scaling V by 0.5: a KL divergence of 0.3 nats per position.")
    grid = alt_text("mean-grid", AltData(interventions=iv))
    # every target, in Q, K, V order: the larger of two close means is not singled out
    assert "rows sentences 0 and 2" in grid and "largest" not in grid
    assert grid.endswith(
        "Replacing each by its mean moves the next-token distribution, as the mean KL per "
        "position, by K 0.55 nats and V 0.6 nats."
    )
    split = [cell(t, 0.5, [kl], sentence=s) for t, kls in (("QK", (0.1, 0.5)), ("V", (0.3, 0.4)))
             for s, kl in enumerate(kls)]  # fmt: skip
    assert alt_text("scaling-grid", AltData(interventions=grids(3, split))).endswith(
        "comes from scaling V by 0.5: a KL divergence of 0.35 nats per position, the mean over 2 "
        "sentences (from 0.3 to 0.4 by sentence), though not on every sentence."
    )
    merged = grids(3, [cell("QK", 0.5, [0.1]), cell("V", 0.5, [0.3])], epsilons=[0.5])
    assert "rows Q or K and V, each scaled by 0.5" in alt_text(
        "scaling-grid", AltData(interventions=merged)
    )


def test_missing_data_still_says_what_is_plotted():
    empty = AltData()
    assert len(ALT) >= 15
    for key in ALT:
        assert alt_text(key, empty).endswith(".")
