"""The comparison's findings on two fake models of different depths (3 and 5 layers):
no maximum or interpolated value stated, a contrast only over enough layers, a float32
round-off read as 0, and a claim the models part on."""

from __future__ import annotations

from attnreport.multi import findings
from attnreport.multi.measures import ModelSide
from tests.fixtures.fake_results import fake_study, typed
from tests.noise_scan import stated_noise


def side(name: str, n_layers: int, seed: int) -> ModelSide:
    results = typed(fake_study(3, n_layers=n_layers, n_heads=2, seed=seed))
    return ModelSide(name, name, results.manifest, results.set, results.interventions)


def test_no_finding_is_a_maximum_or_a_value_between_layers():
    """The comparison states no "differ most" picked from the curves and no value
    interpolated between a model's layers (a depth no layer has)."""
    found = findings.comparisons([side("A", 3, 0), side("B", 5, 1)])
    assert found and [stated_noise(f.text) for f in found] == [[] for _ in found]
    assert not hasattr(findings, "difference") and not hasattr(findings, "statistic_gap")


def test_a_contrast_of_local_and_global_layers_needs_enough_layers_on_each_side():
    """Gemma-3's case: 15 windowed layers against 3 full-attention ones is too few to
    compare (and confounded with depth); 6 on each side is enough."""
    from dataclasses import replace

    def windowed(s: ModelSide, layers) -> ModelSide:
        model = replace(s.manifest.model, layer_windows={lay: 512 for lay in layers})
        return replace(s, manifest=replace(s.manifest, model=model))

    few = findings.window_note(windowed(side("A", 5, 0), range(3)))
    assert (
        "its 2 full-attention layers are too few to set against the 3 windowed ones (a "
        "contrast needs 6 layers on each side), and depth would confound" in few
    )
    assert "see the same keys and differ only in their weights;" in few
    assert "averages" not in few and "median" not in few
    gemma_rope = {"full_attention": {"theta": 1e6}, "sliding_attention": {"theta": 1e4}}
    two_bases = windowed(side("A", 5, 0), range(3))
    two_bases = replace(two_bases, manifest=replace(two_bases.manifest, model=replace(
        two_bases.manifest.model, rope=gemma_rope)))  # fmt: skip
    assert (
        "differ only in their weights and their RoPE base (θ = 10,000 in the windowed "
        "layers, 1,000,000 in the others)" in findings.window_note(two_bases)
    )
    enough = findings.window_note(windowed(side("A", 12, 0), range(6)))
    assert "is a median" in enough and "on its 6 full-attention layers" in enough


def test_depth_gaps_read_as_words_at_two_places():
    from attnreport.multi.measures import apart

    assert apart(0.0041) == "less than 0.01 apart"  # 24/29 against 14/17: not "0.00 apart"
    assert apart(0.07) == "0.07 apart" and apart(0.005) == "0.01 apart"
    onset = findings.sink_onset([side("A", 3, 0), side("B", 5, 1)]).text
    assert ") (" not in onset and onset.startswith("Where the sink forms: ")


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


def test_a_claim_one_model_supports_and_another_contradicts_is_said_with_its_evidence(monkeypatch):
    """The split is read from each model's own verdicts (monkeypatched here to known ones):
    both verdicts with their numbers and the contradicting model's evidence, linked to the
    claims; no finding when the models agree or one is only inconclusive."""
    from attnreport.site.words.claims import Claim
    from attnreport.site.words.verdicts import Verdict

    a, b = side("A", 3, 0), side("B", 5, 1)

    def claim(label, numbers):
        return Claim("k", "Sink heads are quiet.", "blog", "", "", Verdict(label, ""), numbers,
                     "The median head writes 0.4 times less.", "", "split-updates")  # fmt: skip

    verdicts = {"A": claim("supported", "ratio 0.4 (0.3 to 0.5)"),
                "B": claim("contradicted", "ratio 1.6 (1.2 to 2)")}  # fmt: skip
    monkeypatch.setattr(findings, "_claims", lambda s: {"k": verdicts[s.name]})
    found = findings.split_verdict([a, b])
    assert found is not None and found.href == "#claims"
    assert found.text == (
        "The models part on the claim \u201cSink heads are quiet\u201d: supported for A "
        "(ratio 0.4 (0.3 to 0.5)) and contradicted for B (ratio 1.6 (1.2 to 2)). "
        "In B, the median head writes 0.4 times less."
    )
    verdicts["B"] = claim("inconclusive", "")
    assert findings.split_verdict([a, b]) is None
