"""Hybrids: their attention layers are found and verified; the other blocks are not attention.

Tiny random hybrids (no download) of the issue's list that build tiny, each with 2 blocks
of which the config makes some attention (``tests/zoo_models.py`` keeps one layer of each
kind): the layers discovery returns must be exactly those the config names as attention
(or, for Falcon-H1, attention beside Mamba in every block), every one passing the
self-check; the per-layer facts mark the others "not attention" (the report of a hybrid:
``test_hybrid_report.py``). A model with no attention layer at all (Mamba) is refused
naming what it lacks.
"""

from __future__ import annotations

import pytest

from attnreport.errors import AttnReportError
from attnreport.models.facts import layer_facts
from attnreport.models.families import family_for
from attnreport.verification import verified_layers
from tests.zoo_models import build_zoo_model

OTHER_KINDS = {"linear_attention", "conv"}  # the config's names of layers without attention
HYBRIDS = ["qwen3_next", "jamba", "bamba", "falcon_h1", "nemotron_h", "granitemoehybrid", "lfm3"]


@pytest.mark.slow
@pytest.mark.parametrize("model_type", HYBRIDS)
def test_attention_layers_are_the_configs(model_type):
    model, why = build_zoo_model(model_type)
    assert model is not None, why
    kinds = model.config.layer_types
    expected = [i for i, kind in enumerate(kinds) if kind not in OTHER_KINDS]
    assert 0 < len(expected) <= len(kinds)
    specs = verified_layers(family_for(model_type), model)  # discovery + self-check
    assert [s.layer for s in specs] == expected
    facts = layer_facts(specs, len(kinds), "rope")
    assert [f.attention for f in facts] == [kind not in OTHER_KINDS for kind in kinds]
    assert all(f.positions == "none" and not f.qk_norm for f in facts if not f.attention)


def test_a_model_without_attention_is_refused_in_one_line():
    model, why = build_zoo_model("mamba")
    assert model is not None, why
    with pytest.raises(AttnReportError, match="no block has an attention module") as err:
        verified_layers(family_for("mamba"), model)
    assert "\n" not in str(err.value) and "missing: attention layers" in str(err.value)
