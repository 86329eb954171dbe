"""Models are admitted by the self-check at load, not by a list of names; facts are per layer.

Tiny random models built here (no download): the self-check refuses a capture that does
not reproduce the model, naming the check and the layer; a ``model_type`` no family
names is admitted when it verifies; positions are found per layer (SmolLM3's
position-free layers, Phi's and StableLM's rotation of the first dims only, OPT's
absolute positions, MoE attention as dense as its dense sibling's).
"""

from __future__ import annotations

import dataclasses

import pytest
import torch

from attnreport.capture import capture_attention
from attnreport.errors import AttnReportError
from attnreport.models import load_model
from attnreport.models.families import FAMILIES, family_for
from attnreport.models.layout import discover, positional_scheme
from attnreport.verification import self_check, verified_layers
from tests.tiny_models import FAMILY_NAMES
from tests.zoo_models import build_zoo_model

IDS = torch.arange(1, 11)


def _zoo(model_type: str, **overrides):
    model, why = build_zoo_model(model_type, **overrides)
    assert model is not None, why
    return model, verified_layers(family_for(model_type), model)


def test_self_check_refuses_naming_the_check_and_the_layer(tiny_model_dirs):
    """A capture whose layer 1 reads layer 0's output projection cannot sum to the block
    output: refused in one line naming the updates check and layer 1."""
    loaded = load_model(str(tiny_model_dirs["qwen2"]))
    specs = discover(loaded.family, loaded.model)
    self_check(loaded.model, specs)  # the real layout passes
    wrong = [specs[0], dataclasses.replace(specs[1], out_proj=specs[0].out_proj)]
    with pytest.raises(AttnReportError) as err:
        self_check(loaded.model, wrong)
    message = str(err.value)
    assert "\n" not in message
    assert "layer 1" in message and "sum of head updates" in message


def test_an_unnamed_model_type_is_admitted_by_verification():
    """SmolLM3 is in no family module: it gets a family named after it and verifies."""
    assert all("smollm3" not in f.model_types for f in FAMILIES)
    assert family_for("smollm3").name == "smollm3"
    model, specs = _zoo("smollm3")
    assert len(specs) == model.config.num_hidden_layers


def test_position_free_layers_are_found_per_layer():
    """SmolLM3 hands every layer cos and sin but rotates only where no_rope_layers says so;
    a position-free layer has no position term and q as scored is q as projected."""
    model, specs = _zoo("smollm3", no_rope_layers=[1, 0])  # 1: rotates; 0: position-free
    expected = ["rope", "none"]
    assert [s.positions for s in specs] == expected
    capture = capture_attention(model, specs, IDS)
    for spec in specs:
        record = capture.record(spec.layer)
        if spec.positions == "none":
            assert torch.equal(record.q_raw, record.q)
            assert torch.all(record.terms["position"] == 0)
        else:
            assert record.terms["position"].abs().max() > 1e-4
    assert positional_scheme(specs, model) == "rope"


@pytest.mark.parametrize("model_type", ["phi", "stablelm"])
def test_rotation_of_the_first_dims_only_is_undone(model_type):
    """Phi and StableLM rotate the first dims of each head and pass the rest through the
    attention module itself (not GPT-NeoX's function): the dims past the rotary width of
    q as scored are the projected ones, and the rotated ones are undone exactly."""
    model, specs = _zoo(model_type)
    record = capture_attention(model, specs, IDS).record(0)
    assert "partial_rotary" in specs[0].features
    unchanged = torch.all(record.q_raw[:, 1:] == record.q[:, 1:], dim=(0, 1))
    rotated = int((~unchanged).sum())
    assert 0 < rotated < record.q.shape[-1]
    assert torch.all(unchanged[rotated:]) and not torch.any(unchanged[:rotated])


def test_absolute_positions_are_not_rotary():
    """OPT learns absolute positions added to the embeddings: no layer rotates."""
    model, specs = _zoo("opt")
    assert {s.positions for s in specs} == {"none"} and all(s.rotate is None for s in specs)
    assert positional_scheme(specs, model) == "absolute"


@pytest.mark.parametrize(("moe", "dense"), [("qwen3_moe", "qwen3"), ("mixtral", "mistral")])
def test_moe_attention_is_found_as_its_dense_siblings(moe, dense):
    """A mixture of experts changes the MLP, not attention: same features, same positions."""
    _, moe_specs = _zoo(moe, sliding_window=4)  # Mistral's default window is 4096, Mixtral's none
    _, dense_specs = _zoo(dense, sliding_window=4)
    assert [s.features for s in moe_specs] == [s.features for s in dense_specs]
    assert [s.positions for s in moe_specs] == [s.positions for s in dense_specs]


def test_found_positions_match_the_named_families(tiny_model_dirs):
    """Per-layer discovery agrees with what every named family declares."""
    for name in FAMILY_NAMES:
        loaded = load_model(str(tiny_model_dirs[name]))
        specs = discover(loaded.family, loaded.model)
        assert positional_scheme(specs, loaded.model) == loaded.family.positional, name


def test_gated_output_heads_include_the_gate():
    """AFMoE multiplies the attention output by sigmoid(gate_proj(a)) before o_proj: each
    head's update is W_O,h (g_h * z_h), computed here from the module's own weights."""
    model, specs = _zoo("afmoe")
    spec = specs[0]
    assert "output_gate" in spec.features and spec.out_proj is spec.attention.o_proj
    record = capture_attention(model, specs, IDS).record(0)
    with torch.no_grad():
        gate = torch.sigmoid(spec.attention.gate_proj(record.a))  # (query, head * d)
    gate = gate.reshape(len(IDS), record.n_heads, -1).transpose(0, 1)  # (head, query, d)
    weight = spec.attention.o_proj.weight.detach().t().reshape(record.n_heads, -1, 32)
    expected = torch.einsum("hqd,hdm->hqm", gate * record.context, weight)
    torch.testing.assert_close(record.updates, expected, atol=1e-6, rtol=1e-5)
    ungated = torch.einsum("hqd,hdm->hqm", record.context, weight)
    assert (ungated - expected).abs().max() > 1e-3  # the gate matters


def test_a_norm_before_the_output_projection_is_a_per_token_gate():
    """BitNet normalises the attention output over all heads before o_proj: g * z / rms(z)
    is one scale per token times an elementwise weight, so each head's update is
    W_O,h (g_h * z_h) / rms(z), computed here from the norm's own weight and epsilon."""
    model, specs = _zoo("bitnet")
    spec = specs[0]
    norm = spec.attention.attn_sub_norm
    assert spec.out_proj is spec.attention.o_proj and "output_gate" in spec.features
    assert "qk_norm" not in spec.features  # the output's norm is not a norm of q or k
    record = capture_attention(model, specs, IDS).record(0)
    z = record.context.transpose(0, 1).reshape(len(IDS), -1)  # (query, head * d)
    scale = torch.rsqrt(z.pow(2).mean(-1, keepdim=True) + norm.variance_epsilon)
    gated = (norm.weight.detach() * z * scale).reshape(len(IDS), record.n_heads, -1)
    weight = spec.attention.o_proj.weight.detach().t().reshape(record.n_heads, -1, 32)
    expected = torch.einsum("qhd,hdm->hqm", gated, weight)
    torch.testing.assert_close(record.updates, expected, atol=1e-6, rtol=1e-5)
    plain = torch.einsum("hqd,hdm->hqm", record.context, weight)
    assert (plain - expected).abs().max() > 1e-3  # the norm matters


def test_learned_biases_in_the_mask_are_a_score_bias():
    """Doge adds exp(A * softplus(dt_proj(v))) per head and key to the scores, inside its
    mask: the logit minus c q.k (q and k as scored) is that bias wherever a key is allowed,
    and the blocked keys stay blocked."""
    model, why = build_zoo_model("doge")
    assert model is not None, why
    with torch.no_grad():  # A starts at 0 (a bias of 1 everywhere): make the biases differ
        for layer in model.model.layers:
            layer.self_attn.A.copy_(torch.linspace(-1.0, 1.0, layer.self_attn.A.numel()))
    specs = verified_layers(family_for("doge"), model)
    attn = specs[0].attention
    assert "score_bias" in specs[0].features and "alibi" not in specs[0].features
    record = capture_attention(model, specs, IDS).record(0)
    groups = record.n_heads // record.k.shape[0]
    k_all = record.k.repeat_interleave(groups, dim=0)
    bias = record.logits - record.q @ k_all.transpose(1, 2) * record.scaling
    with torch.no_grad():
        v = record.v.transpose(0, 1).reshape(len(IDS), -1)  # (key, kv_head * d)
        dt = torch.exp(attn.A * torch.nn.functional.softplus(attn.dt_proj(v)))  # (key, kv_head)
    expected = dt.t().repeat_interleave(groups, dim=0)[:, None, :].expand_as(bias)
    allowed = record.allowed.expand_as(bias)
    assert torch.equal(record.allowed, torch.ones(len(IDS), len(IDS), dtype=torch.bool).tril())
    torch.testing.assert_close(bias[allowed], expected[allowed], atol=1e-5, rtol=1e-5)
    assert expected[allowed].std() > 0.05  # biases that change the probabilities
