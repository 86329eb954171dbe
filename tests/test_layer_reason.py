"""A model's pages say why its interventions run in the layer they run in: the rule the
analysis applied (``analyses.layer_choice``) and the number behind it."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from click.testing import CliRunner

from attnreport.analyses.layer_choice import depth, matched_layer, strongest_first_token_layer
from attnreport.cli import main
from attnreport.results import load
from attnreport.site.words.layer_reason import layer_reason
from tests.fixtures.fake_results import fake_study, typed

# three layers of two heads: layer 1's heads focus on the first token most (0.75 on average)
POOLED = {
    "statistic": np.array(["first_focus"] * 6 + ["self_focus"] * 6),
    "layer": np.array([0, 0, 1, 1, 2, 2] * 2),
    "value": np.array([0.1, 0.3, 0.9, 0.6, 0.5, 0.7, *[0.99] * 6]),
}


def manifest(layer=None, depth_=None, vocab=100, n_layers=3):
    base = typed(fake_study(1, n_layers=n_layers, n_heads=2)).manifest
    settings = replace(base.settings, intervene_layer=layer, intervene_depth=depth_)
    model = replace(base.model, vocab_size=vocab, n_layers=n_layers)
    return replace(base, settings=settings, model=model)


def test_the_default_rule_is_named_with_its_number():
    assert strongest_first_token_layer(POOLED) == 1
    text = layer_reason(manifest(), POOLED, 1)
    assert text == (
        "The interventions run in layer 1, by the default rule: of the model's 3 attention "
        "layers, the one whose heads most often make the first token their top key, pooled "
        "over the set (here 75% of the queries, averaged over its heads)."
    )
    assert (
        layer_reason(manifest(), POOLED, 2) == "The interventions run in layer 2."
    )  # no rule fits


def test_a_setting_or_a_comparison_is_named():
    assert layer_reason(manifest(layer=2), POOLED, 2).endswith(
        "layer 2, the layer the intervene_layer setting names."
    )
    older = layer_reason(manifest(layer=2, vocab=0), POOLED, 2)
    assert "results before schema 9 do not say whether a person chose it" in older
    asked = layer_reason(manifest(depth_=0.5), POOLED, 1)
    assert asked == (
        "The interventions run in layer 1, at relative depth 0.50 (0: the first layer, 1: the "
        "last), the attention layer nearest the depth 0.5 that the intervene_depth setting "
        "asks for."
    )
    matched = layer_reason(manifest(layer=1, depth_=0.5862), POOLED, 1)
    assert "at matched depths, and layer 1 is the one nearest 0.59" in matched


def test_depths_match_to_the_nearest_layer():
    assert depth(24, 30) == pytest.approx(24 / 29)
    assert matched_layer(depth(24, 30), 18) == 14  # the example: SmolLM2 24/29 -> Gemma 14/17
    assert matched_layer(0.5, 5) == 2 and matched_layer(0.5, 1) == 0


def test_an_analysis_runs_at_the_depth_it_is_asked_for(tmp_path, tiny_model_dirs):
    (tmp_path / "s.txt").write_text("the cat sat on the mat\n", encoding="utf-8")
    model = tiny_model_dirs["llama"]
    (tmp_path / "a.toml").write_text(
        f'model = "{model}"\nsentences = "s.txt"\nintervene_depth = 1\n', encoding="utf-8"
    )
    done = CliRunner().invoke(
        main, ["analyze", "--config", str(tmp_path / "a.toml"), "--out", str(tmp_path / "r")]
    )
    assert done.exit_code == 0, done.output
    results = load(tmp_path / "r")
    last = results.manifest.model.n_layers - 1
    assert results.interventions.layer == last
    assert results.manifest.settings.intervene_depth == 1.0
    assert "at relative depth 1.00" in layer_reason(results.manifest, None, last)
