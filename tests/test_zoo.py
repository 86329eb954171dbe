"""The zoo: every decoder-only text type of transformers, verified or refused in one line.

Each type is one test (parallel-friendly: no shared fixture), building its tiny random
model from a small config (``tests/zoo_models.py``; no download) and loading it as any
model loads (discovery, then the self-check). The outcome must be the one recorded in
``attnreport.models.families.zoo``, from which the README's counts are generated: a
verified type passes, a refused one raises ``AttnReportError`` in one line containing
what it lacks, and nothing raises anything else. Outcomes are recorded for one
transformers version; under another these tests are skipped unless
ATTNREPORT_ZOO_ANY_RELEASE=1 asks to check that release against the record: then the
listing test says which types came or went, and each type whose outcome moved fails.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from attnreport.errors import AttnReportError
from attnreport.models.families import family_for, zoo
from attnreport.verification import verified_layers
from tests.zoo_models import ANY_RELEASE, RECORDED_RELEASE, build_zoo_model, on_record, zoo_types

RECORDED = sorted({*zoo.VERIFIED, *zoo.REFUSED, *zoo.NOT_TINY})
# checking another release: its new types too, each failing with the outcome to record
CHECKED = RECORDED if RECORDED_RELEASE or not ANY_RELEASE else sorted({*RECORDED, *zoo_types()})


def test_outcomes_are_disjoint_and_mostly_verified():
    assert len(RECORDED) == len(zoo.VERIFIED) + len(zoo.REFUSED) + len(zoo.NOT_TINY)
    assert set(zoo.HYBRID) <= set(zoo.VERIFIED)
    assert set(zoo.ATTENTION_FREE) <= set(zoo.REFUSED)
    built = len(zoo.VERIFIED) + len(zoo.REFUSED)
    assert len(zoo.VERIFIED) / built >= 0.90  # 122 of 135 with transformers 5.24


def test_constraints_pin_the_recorded_release():
    """A fresh install gets the release the outcomes were recorded with."""
    constraints = (Path(__file__).resolve().parent.parent / "constraints.txt").read_text()
    assert re.search(r"^transformers==(\S+)$", constraints, re.M)[1] == zoo.TRANSFORMERS


@pytest.mark.slow
@on_record
def test_every_decoder_type_has_a_recorded_outcome():
    assert sorted(zoo_types()) == RECORDED


@pytest.mark.slow
@on_record
@pytest.mark.parametrize("model_type", CHECKED)
def test_zoo_model_is_verified_or_refused_in_one_line(model_type):
    model, why = build_zoo_model(model_type)
    if model is None:
        assert model_type in zoo.NOT_TINY, f"does not build tiny: {why}"
        return
    assert model_type not in zoo.NOT_TINY, "builds tiny now: record its outcome"
    try:
        specs = verified_layers(family_for(model_type), model)
    except AttnReportError as err:
        message = str(err)
        assert model_type in zoo.REFUSED, f"refused: {message}"
        assert "\n" not in message and zoo.REFUSED[model_type] in message
        return
    assert model_type in zoo.VERIFIED, "verifies now: record it"
    if model_type in zoo.HYBRID:  # some blocks are not attention: no spec for them
        assert 0 < len(specs) < model.config.num_hidden_layers
    else:
        assert len(specs) == model.config.num_hidden_layers


@on_record
@pytest.mark.parametrize("model_type", ["deepseek_v2", "deepseek_v3", "minicpm3"])
def test_latent_attention_rotates_its_last_dims(model_type):
    """Multi-head latent attention: q, k = [plain dims, rotated dims], v of another width;
    the per-head updates use v's width and the rotation is undone on the last dims only."""
    from attnreport.capture import capture_attention
    from tests.test_verification import IDS

    model, why = build_zoo_model(model_type, v_head_dim=12)  # q and k have 4 + 4 dims
    assert model is not None, why
    specs = verified_layers(family_for(model_type), model)
    record = capture_attention(model, specs, IDS).record(0)
    rope = model.config.qk_rope_head_dim
    assert torch_equal(record.q_raw[..., :-rope], record.q[..., :-rope])
    assert not torch_equal(record.q_raw[:, 1:, -rope:], record.q[:, 1:, -rope:])
    assert specs[0].layout.value_dim == model.config.v_head_dim != specs[0].layout.head_dim


def torch_equal(a, b) -> bool:
    import torch

    return bool(torch.equal(a, b))
