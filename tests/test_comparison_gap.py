"""The comparison's "what differs" finding against an independent computation: two fake
models of different depths (3 and 5 layers), each curve read straight from the typed
tables, the other model interpolated on relative depth by hand."""

from __future__ import annotations

import numpy as np
import pytest

from attnreport.multi import findings
from attnreport.multi.measures import ModelSide
from tests.fixtures.fake_results import fake_study, typed

TOL = 1e-12


def side(name: str, n_layers: int, seed: int) -> ModelSide:
    results = typed(fake_study(3, n_layers=n_layers, n_heads=2, seed=seed))
    return ModelSide(name, name, results.manifest, results.set, results.interventions)


def per_layer(s: ModelSide, statistic: str) -> tuple[np.ndarray, np.ndarray]:
    """(relative depth, mean over the layer's heads) of a focus statistic, by hand."""
    pooled = s.set.focus_pooled
    rows = [(int(lay), float(v)) for st, lay, v in zip(pooled.statistic, pooled.layer, pooled.value, strict=True) if st == statistic]  # fmt: skip
    layers = sorted({lay for lay, _ in rows})
    means = [np.mean([v for lay, v in rows if lay == layer]) for layer in layers]
    return np.array(layers) / (s.n_layers - 1), np.array(means)


@pytest.mark.parametrize("statistic", ["first_focus", "self_focus"])
def test_each_curves_largest_gap_is_the_hand_interpolated_one(statistic):
    a, b = side("A", 3, 0), side("B", 5, 1)
    x, y = per_layer(a, statistic)
    bx, by = per_layer(b, statistic)
    gaps = np.abs(y - np.interp(x, bx, by))
    k = int(gaps.argmax())
    got = findings.statistic_gap([a, b], statistic)
    assert got[0] == statistic
    np.testing.assert_allclose(got[1:], [x[k], gaps[k], y[k], np.interp(x, bx, by)[k]], atol=TOL)


def test_the_finding_names_the_largest_gap_among_the_shares_and_its_numbers():
    a, b = side("A", 3, 0), side("B", 5, 1)
    gaps = [findings.statistic_gap([a, b], s) for s in findings.SHARES]
    statistic, at, _, mine, theirs = max(gaps, key=lambda g: g[2])
    found = findings.difference([a, b])
    assert found is not None and found.figure == f"compare-{statistic.replace('_', '-')}"
    unit = "% of heads" if statistic == "sink_rate" else ""
    assert f"at depth {at:.2f}" in found.text
    assert f"{mine:.3g}{unit} for A against {theirs:.3g}{unit} for B" in found.text
    assert findings.difference([a]) is None
    same = findings.difference([a, side("A2", 3, 0)])
    assert same is not None and same.text.startswith("No difference")


def test_depth_gaps_read_as_words_at_two_places():
    from attnreport.multi.measures import apart

    assert apart(0.0041) == "less than 0.01 apart"  # 24/29 against 14/17: not "0.00 apart"
    assert apart(0.07) == "0.07 apart" and apart(0.005) == "0.01 apart"
    onset = findings.sink_onset([side("A", 3, 0), side("B", 5, 1)]).text
    assert ") (" not in onset and onset.startswith("Where the sink forms: ")


def test_a_value_read_between_two_layers_says_which():
    """Depth 0.5 is a 5-layer model's layer 2; depth 1/3 falls between a 3-layer model's
    layers 0 and 1, and depth 2/3 between its layers 1 and 2 and a 5-layer model's 2 and 3."""
    three, five = side("A", 3, 0), side("B", 5, 1)
    assert findings._between([five], 0.5) == ""
    assert findings._between([three], 1 / 3) == " (A: interpolated between its layers 0 and 1)"
    assert findings._between([three, five], 2 / 3) == (
        " (A: interpolated between its layers 1 and 2; B: interpolated between its layers 2 and 3)"
    )


def test_a_norm_undoing_v_scaling_is_set_against_a_model_that_moves():
    """One model with a post-attention norm (V x 0.5: 1.4e-8 nats, float32 round-off) beside
    one without (0.12 nats): the interventions finding names both numbers and the norm."""
    from dataclasses import replace

    from tests.fixtures.grids import scaling_cells

    def with_v(s: ModelSide, kl: dict, features: tuple[str, ...]) -> ModelSide:
        iv = replace(s.interventions, scaling=replace(s.interventions.scaling, cells=scaling_cells(kl)))  # fmt: skip
        model = replace(s.manifest.model, features=features)
        return replace(s, manifest=replace(s.manifest, model=model), interventions=iv)

    plain = with_v(side("A", 3, 0), {("V", 0.5): [0.12], ("V", 1e-10): [0.35]}, ("gqa",))
    normed = with_v(side("B", 5, 1), {("V", 0.5): [1.4e-8], ("V", 1e-10): [0.33]},
                    ("gqa", "post_attention_norm"))  # fmt: skip
    assert findings.v_norm_note([plain, normed]) == (
        " Scaling V by 0.5 moves A's next-token distribution by 0.12 nats per position and B's "
        "by less than 1e-6 nats (0 within float32): B normalises the attention block's output "
        "before adding it (a post-attention norm), which undoes a scaling of V."
    )
    assert findings.v_norm_note([plain, with_v(normed, {("V", 0.5): [1.4e-8], ("V", 1e-10): [0.33]}, ("gqa",))]) == ""  # fmt: skip
    assert findings.v_norm_note([normed, normed]) == ""  # nothing moves to set it against


def test_a_claim_one_model_bears_out_and_another_contradicts_is_said_with_its_evidence(monkeypatch):
    """The split is read from each model's own verdicts (monkeypatched here to known ones):
    both verdicts and the contradicting model's evidence, linked to the figure drawing the
    claim's measure; no finding when the models agree or the claim has no comparison figure."""
    from attnreport.site.words.claims import Claim
    from attnreport.site.words.verdicts import Verdict

    a, b = side("A", 3, 0), side("B", 5, 1)

    def claim(label, reason, figure="set-head-impact"):
        return Claim("k", "Sink heads are quiet.", "blog", Verdict(label, reason),
                     "The 3 sink heads write updates of 29% of ‖x‖.", "", figure)  # fmt: skip

    verdicts = {"A": claim("partly supported", "1 of 3 tested break it"),
                "B": claim("contradicted", "the effect points the other way")}  # fmt: skip
    monkeypatch.setattr(findings, "_claims", lambda s: {"k": verdicts[s.name]})
    found = findings.split_verdict([a, b])
    assert found is not None and found.figure == "compare-head-impact"
    assert found.text == (
        "The models part on the claim \u201cSink heads are quiet\u201d: partly supported for A "
        "(1 of 3 tested break it) and contradicted for B (the effect points the other way). "
        "In B, the 3 sink heads write updates of 29% of \u2016x\u2016."
    )
    verdicts["B"] = claim("supported", "none of 3 tested breaks it")
    assert findings.split_verdict([a, b]) is None
    verdicts["B"] = claim("contradicted", "2 of 3 tested break it", figure="scaling-grid")
    verdicts["A"] = claim("supported", "none of 3 tested breaks it", figure="scaling-grid")
    assert findings.split_verdict([a, b]) is None  # no comparison figure draws it
