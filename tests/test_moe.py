"""Mixtures of experts change the MLP, not attention: capture is the dense one's, exactly.

A tiny Mixtral is given the weights of a tiny Mistral wherever the two share a parameter
(embeddings, norms, q/k/v/o) and the same config outside the MLP: layer 0's attention then reads the same input, so every
captured number of that layer must equal the dense model's (the experts only change what
layer 1 reads); and the MoE model verifies with the same per-layer facts.
"""

from __future__ import annotations

import torch

from attnreport.capture import capture_attention
from attnreport.models.families import family_for
from attnreport.verification import verified_layers
from tests.zoo_models import build_zoo_model

IDS = torch.arange(1, 11)


def _verified(model_type: str, **overrides):
    model, why = build_zoo_model(model_type, **overrides)
    assert model is not None, why
    return model, verified_layers(family_for(model_type), model)


def test_moe_attention_is_captured_as_the_dense_ones():
    same = {"sliding_window": 4, "rms_norm_eps": 1e-5, "rope_parameters": {"rope_theta": 1e4}}
    dense, dense_specs = _verified("mistral", **same)
    moe, _ = _verified("mixtral", **same)
    shared = {k: v for k, v in dense.state_dict().items() if k in moe.state_dict()}
    assert any(".self_attn." in k for k in shared)
    missing = moe.load_state_dict(shared, strict=False).missing_keys
    assert all(".mlp." in k or "experts" in k or "gate" in k for k in missing), missing
    moe_specs = verified_layers(family_for("mixtral"), moe)  # still verifies with the new weights
    assert [(s.features, s.positions, s.window) for s in moe_specs] == [
        (s.features, s.positions, s.window) for s in dense_specs
    ]
    ours = capture_attention(moe, moe_specs, IDS).record(0)
    theirs = capture_attention(dense, dense_specs, IDS).record(0)
    for name in ("probs", "logits", "updates", "context"):
        torch.testing.assert_close(getattr(ours, name), getattr(theirs, name), rtol=0, atol=0)
    later = capture_attention(moe, moe_specs, IDS).record(1).probs
    dense_later = capture_attention(dense, dense_specs, IDS).record(1).probs
    assert (later - dense_later).abs().max() > 1e-6  # the experts do change what layer 1 reads
