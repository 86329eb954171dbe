"""What an adapter can supply is declared on the family type (``base.Family``): a rotation
discovery inverts, a composed output projection, the model's layout of our
probabilities. A family reads each as a typed hook, None where it has none."""

from __future__ import annotations

from attnreport.models.families import FAMILIES, family_for
from attnreport.models.families.adapter import AdapterFamily
from attnreport.models.families.gptj import rotate as gptj_rotate
from attnreport.models.families.jetmoe import reported as jetmoe_reported


def _named(model_type: str):
    return next(f for f in FAMILIES if model_type in f.model_types)


def test_a_family_without_an_adapter_supplies_no_hook():
    for family in (_named("llama"), family_for("an_unnamed_type")):
        assert (family.rotate, family.output, family.reported) == (None, None, None)


def test_an_adapter_familys_hooks_are_its_adapters_and_none_where_it_has_none():
    gptj, jetmoe, bloom = _named("gptj"), _named("jetmoe"), _named("bloom")
    assert gptj.rotate is gptj_rotate
    assert (gptj.output, gptj.reported) == (None, None)
    assert jetmoe.reported is jetmoe_reported and callable(jetmoe.output)
    assert jetmoe.rotate is None
    assert (bloom.rotate, bloom.output, bloom.reported) == (None, None, None)
    for family in FAMILIES:
        if isinstance(family, AdapterFamily):
            hooks = (family.rotate, family.output, family.reported)
            adapter = family.adapter
            assert hooks == (adapter.rotate, adapter.output, adapter.reported), family.name
