"""Per-layer positional facts: found at load, recorded in the manifest (schema 6), shown on
the model card.

Tiny random models (no download) whose layers differ in how positions enter: SmolLM3
with a position-free layer, Phi's partial rotary, OPT's learned absolute positions,
Gemma 2's window and soft-cap, gpt-oss's sinks, Qwen3's QK-norm, AFMoE's output gate,
BLOOM's ALiBi. The facts must match the configs that built the models.
"""

from __future__ import annotations

import json

import pytest

from attnreport.models.facts import layer_facts
from attnreport.models.families import family_for
from attnreport.models.layout import positional_scheme
from attnreport.results.layers import LayerFacts
from attnreport.results.manifest import manifest_from_json, model_from_json
from attnreport.site.layer_card import layer_rows
from attnreport.verification import verified_layers
from tests.zoo_models import build_zoo_model


def _facts(model_type: str, **overrides) -> tuple[LayerFacts, ...]:
    model, why = build_zoo_model(model_type, **overrides)
    assert model is not None, why
    specs = verified_layers(family_for(model_type), model)
    n = model.config.num_hidden_layers
    return layer_facts(specs, n, positional_scheme(specs, model))


def test_positions_per_layer():
    smol = _facts("smollm3", no_rope_layers=[1, 0])  # layer 0 rotates, layer 1 does not
    assert [(f.positions, f.rotary_dims) for f in smol] == [("rope", 8), ("none", 0)]
    phi = _facts("phi")  # partial_rotary_factor 0.5 of 8 dims
    assert {(f.positions, f.rotary_dims) for f in phi} == {("partial_rope", 4)}
    assert {f.positions for f in _facts("opt")} == {"absolute"}
    assert {f.positions for f in _facts("bloom")} == {"alibi"}


@pytest.mark.parametrize(
    ("model_type", "overrides", "expected"),
    [
        ("gemma2", {"sliding_window": 4}, {"softcap": [True, True], "window": [4, None]}),
        ("gpt_oss", {}, {"sinks": [True, True]}),
        ("qwen3", {}, {"qk_norm": [True, True], "sinks": [False, False]}),
        ("afmoe", {}, {"output_gate": [True, True], "softcap": [False, False]}),
        ("olmo2", {}, {"post_norm": [True, True], "qk_norm": [True, True]}),
        ("exaone4", {}, {"post_norm": [True, True]}),  # found by what it reads, no family row
        ("llama", {}, {"post_norm": [False, False]}),
    ],
)
def test_features_per_layer(model_type, overrides, expected):
    facts = _facts(model_type, **overrides)
    for name, values in expected.items():
        assert [getattr(f, name) for f in facts] == values, name


def test_a_block_without_a_spec_is_not_attention():
    facts = layer_facts([], 2, "rope")
    assert [f.attention for f in facts] == [False, False]
    rows = dict(layer_rows(facts, 8))
    assert rows["Not attention"] == "both layers (no attention)"


def _model_json(layers):
    base = {
        "name": "m", "source": "directory", "fingerprint": "x", "model_type": "phi",
        "family": "phi", "positional": "rope", "n_layers": 2, "n_heads": 4, "n_kv_heads": 4,
        "head_dim": 8, "hidden_size": 32, "context": 64, "attn_implementation": "eager",
        "dtype": "float32", "device": "cpu", "tokenizer": "T",
    }  # fmt: skip
    return base if layers is None else {**base, "layers": layers}


def test_manifest_round_trip_and_older_folders():
    from attnreport.results.manifest import _model_json as model_to_json

    facts = _facts("phi")
    info = model_from_json(_model_json([json.loads(json.dumps(f.__dict__)) for f in facts]), "m")
    assert info.layers == facts
    assert model_to_json(info)["layers"][0]["positions"] == "partial_rope"
    older = model_from_json(_model_json(None), "m")  # schema 5: no facts, none written back
    assert older.layers == () and "layers" not in model_to_json(older)


def test_malformed_facts_are_refused_in_one_line():
    from attnreport.errors import AttnReportError

    with pytest.raises(AttnReportError, match="model.layers") as err:
        model_from_json(_model_json([{"layer": 0, "positions": "spiral"}]), "manifest.json")
    assert "\n" not in str(err.value)


def test_the_model_card_shows_the_facts():
    from attnreport.site.pages import model_card

    manifest = {
        "attnreport_version": "0",
        "model": _model_json([f.__dict__ for f in _facts("gemma2", sliding_window=4)]),
        "sentences": [],
    }
    rows = dict(model_card(manifest_from_json(manifest)))
    assert rows["Positions by layer"] == "rotary in both layers"
    assert rows["Sliding window"] == "4 tokens in layer 0"
    assert rows["Soft-capped scores"] == "both layers"
    assert "Not attention" not in rows and "QK-norm" not in rows


def test_the_card_names_the_layers_with_a_post_attention_norm():
    rows = dict(layer_rows(_facts("olmo2"), 8))
    assert rows["Post-attention norm"] == "both layers"
    assert "Post-attention norm" not in dict(layer_rows(_facts("llama"), 8))
