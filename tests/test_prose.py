"""The page sentences follow the prose rules: ranges, ratios, probability differences."""

from __future__ import annotations

from attnreport.site.words import prose
from tests.fixtures.grids import cell, grids


def focus_rows(first: dict[int, float], n_heads: int = 3, concentration: float = 0.2):
    return [
        {"layer": layer, "head": head, "first_focus": v, "self_focus": 0.1,
         "concentration": concentration, "n_queries": 5}
        for layer, v in first.items() for head in range(n_heads)
    ]  # fmt: skip


def test_first_token_layers_read_as_ranges():
    first = {layer: 0.9 if 2 <= layer <= 9 or layer >= 12 else 0.1 for layer in range(30)}
    assert prose.first_token_lead(focus_rows(first)) == (
        "Layers 2-9 and 12-29 put most heads on the first token."
    )
    assert prose.first_token_lead(focus_rows(dict.fromkeys(range(30), 0.9))) == (
        "All 30 layers put most of their heads on the first token."
    )
    alternating = {layer: 0.9 if layer % 2 == 0 else 0.1 for layer in range(10)}
    assert prose.first_token_lead(focus_rows(alternating)) == (
        "Every other layer from 0 to 8 puts most heads on the first token."
    )
    assert (
        prose.first_token_lead(focus_rows({0: 0.9, 1: 0.1}))
        == "Layer 0 puts most heads on the first token."
    )


def test_concentration_is_a_lead_in_percentage_points():
    text = prose.focus_summary(focus_rows({0: 0.1, 1: 0.2}, concentration=0.95))
    assert text[-1] == (
        "The most decided head is layer 0, head 0: on average its top key gets 95 percentage "
        "points more probability than the runner-up."
    )
    assert " 1 of probability" not in " ".join(text)
    whole = prose.focus_summary(focus_rows({0: 0.1}, concentration=1.0))[-1]
    assert "100 percentage points" not in whole and "almost all of the probability" in whole


def test_block_size_near_one_is_never_one_times():
    block = [{"layer": 0, "query": q, "magnitude": m} for q, m in enumerate([1.0, 1.08])]
    block += [{"layer": 1, "query": q, "magnitude": 0.0853} for q in range(2)]
    heads = [{"layer": 0, "head": 0, "query": 0, "magnitude": 0.402, "orientation": -0.0146}]
    text = prose.impact_summary(heads, block, 576)
    assert text[0] == (
        "The attention block of layer 0 changes the hidden state most: its output is on average "
        "1.04 times the size of the hidden state, against 9% in layer 1."
    )
    assert text[1] == (
        "The head with the largest update is layer 0, head 0 (40% of the size of the hidden "
        "state); on average it is about orthogonal to the hidden state (cosine -0.015, within "
        "±0.125 = 3/√576)."
    )
    heads[0]["orientation"] = -0.3
    assert (
        "points against the hidden state (cosine -0.3)"
        in prose.impact_summary(heads, block, 576)[1]
    )
    near = [{"layer": 0, "query": 0, "magnitude": 0.998}]
    assert "about the size of the hidden state" in prose.impact_summary([], near)[0]
    assert len(text) == 2  # no post-attention norm: nothing more to say
    normed = prose.impact_summary(heads, block, 576, before_norm=True)
    assert normed[:2] == prose.impact_summary(heads, block, 576)
    assert "these sizes are taken before that norm" in normed[2]


def test_scaling_names_q_and_k_together_when_they_tie():
    cells = [cell(t, e, [kl])
             for t, e, kl in [("Q", 1e-10, 0.163), ("K", 1e-10, 0.163), ("V", 0.5, 0.003)]]  # fmt: skip
    assert prose.scaling_summary(grids(20, cells).scaling, 20) == (
        "Scaling Q or K by 1e-10 in layer 20 changes the next-token distribution most, a KL "
        "divergence of 0.16 nats per position; scaling V by 0.5 changes it least, 0.003 nats "
        "per position."
    )


def test_scaling_with_a_post_attention_norm_says_why_v_barely_moves():
    """Gemma's grid: V x 0.5 is the least change, and the norm is the reason, said once
    (the number is not repeated); when another cell is the least, the number is given."""
    grid = [("Q", 0.5, 0.0128), ("Q", 1e-10, 0.127), ("V", 0.5, 1.4e-8), ("V", 1e-10, 0.33)]
    cells = [cell(t, e, [kl]) for t, e, kl in grid]
    text = prose.scaling_summary(grids(14, cells).scaling, 14, post_norm=True)
    assert text.endswith(  # 1.4e-8 nats is float32 round-off: 0 within float32 (issue 39)
        "scaling V by 0.5 leaves it unchanged within float32 (under 1e-6 nats). V scaled by 0.5 "
        "moves it so little because the model normalises the attention block's output before "
        "adding it to the hidden state (a post-attention norm), and the norm undoes a scaling "
        "of V until the output is small enough for the norm's own epsilon to matter; at 1e-10 "
        "it is 0.33 nats per position."
    )
    assert "post-attention" not in prose.scaling_summary(grids(14, cells).scaling, 14)
    q_least = [cell("Q", 0.5, [1e-5]), cells[1], cell("V", 0.5, [4e-4]), cells[3]]
    other = prose.scaling_summary(grids(14, q_least).scaling, 14, post_norm=True)
    assert "scaling Q by 0.5 changes it least, 1.0e-5 nats per position." in other
    assert "Scaling V by 0.5 moves it only 4.0e-4 nats per position: the model normalises" in other


def test_set_summary_sizes_and_percentages():
    pooled = [{"layer": 0, "head": h, "statistic": "first_focus", "value": v, "min": lo, "max": hi}
              for h, (v, lo, hi) in enumerate([(0.9, 0.8, 1.0), (0.7, 0.08, 1.0)])]  # fmt: skip
    impact = [{"layer": 0, "head": 0, "magnitude": 0.218}]
    text = prose.set_summary(pooled, impact, 6)
    assert text[1] == (
        "Layer 0, head 1 varies most between sentences: its first-token share ranges from 8% to 100%."
    )
    assert text[2] == (
        "Heads in layer 0 change the hidden state most, with updates on average 22% of the size "
        "of the hidden state."
    )
