"""The adapters that define a head where the model has no one output projection (JetMoE's
attention experts, DiffLlama's differential heads), DeepSeek V2's complex rotation,
Inkling 2's sink logit per query, and Falcon's ALiBi, on tiny random models built from
small configs (no download).

Each adapter's numbers are checked against an independent computation from the model's
own weights: the per-head updates against the definition its module documents, the
model's reported probabilities against ours, and the adapted model's logits against the
model's own (what the self-check's last layer cannot see: nothing reads its output).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from click.testing import CliRunner
from transformers import FalconConfig, FalconForCausalLM

from attnreport import interface
from attnreport.capture import capture_attention
from attnreport.cli import main
from attnreport.config import Settings
from attnreport.interventions import identity, run_modified, scale
from attnreport.models.families import family_for
from attnreport.sentence_pass import analyze_pass
from attnreport.verification import verified_layers
from tests.zoo_models import build_zoo_model, on_record, save_zoo_model

IDS = torch.tensor([5, 3, 9, 9, 2, 7, 1, 4, 4, 8, 6, 3])
# Inkling 2 is a zoo model (no family row): its tests run on the zoo's release of
# transformers (``on_record``), as its outcome is recorded (5.24 rewrote its attention)
ATOL = 1e-5  # float32 models of magnitude ~1: a few hundred float32 units


def _verified(model_type: str):
    model, why = build_zoo_model(model_type)
    assert model is not None, why
    specs = verified_layers(family_for(model_type), model)
    return model, specs, capture_attention(model, specs, IDS).record(0)


@pytest.mark.parametrize("model_type", ["jetmoe", "diffllama", "deepseek_v2"])
def test_adapted_model_computes_the_models_own_logits(model_type):
    model, _ = build_zoo_model(model_type)
    with torch.no_grad():
        own = model(input_ids=IDS[None], use_cache=False).logits
        with family_for(model_type).adapted(model):
            adapted = model(input_ids=IDS[None], use_cache=False).logits
    torch.testing.assert_close(adapted, own, atol=ATOL, rtol=0)


def _routing(moa, a: torch.Tensor):
    """(top experts (query, top_k), their gates): softmax over the top-k router logits."""
    logits = a @ moa.router.layer.weight.t()
    values, top = logits.topk(moa.top_k, dim=1)
    return top, torch.softmax(values, dim=1)


def test_jetmoe_heads_are_the_experts_of_each_kv_head():
    """Head (h, e) = kv head h attended with expert e's query: its update is expert e's
    output projection of its output, gated by e's routing weight (zero where e is not
    routed); the model's slot k of kv head h is the head of the token's k-th expert."""
    model, specs, record = _verified("jetmoe")
    spec, moa = specs[0], specs[0].attention.experts
    experts, kv, d = moa.num_experts, spec.layout.n_kv_heads, spec.layout.head_dim
    assert spec.layout.n_heads == experts * kv and {"gqa", "output_gate"} <= spec.features
    top, gates = _routing(moa, record.a)
    weight = moa.output_linear.weight.detach()  # (E, model, kv * d)
    expected = torch.zeros_like(record.updates)
    for i in range(IDS.shape[0]):
        for slot in range(moa.top_k):
            e = int(top[i, slot])
            for h in range(kv):
                z = record.context[h * experts + e, i]
                expected[h * experts + e, i] = gates[i, slot] * (
                    weight[e][:, h * d : (h + 1) * d] @ z
                )
    torch.testing.assert_close(record.updates, expected, atol=ATOL, rtol=0)
    torch.testing.assert_close(record.out_bias, moa.bias.detach(), atol=0, rtol=0)
    with torch.no_grad():
        reported = model(input_ids=IDS[None], output_attentions=True, use_cache=False).attentions
    for slot in range(moa.top_k):
        for h in range(kv):
            ours = record.probs[h * experts + top[:, slot], torch.arange(IDS.shape[0])]
            torch.testing.assert_close(reported[0][0, slot * kv + h], ours, atol=1e-6, rtol=0)


def test_diffllama_heads_sum_to_the_differential_heads():
    """Heads j and j + H/2 (each with its own map, value [v1 | v2]) make differential head j:
    their updates sum to o_proj's columns of j applied to (1 - lambda_init) y_j / rms(y_j),
    y_j = z_j - lambda z_(j+H/2), computed here from the model's weights."""
    model, specs, record = _verified("diffllama")
    spec, attn = specs[0], specs[0].attention
    heads, d = spec.layout.n_heads, spec.layout.head_dim
    assert spec.layout.value_dim == 2 * d and "qk_norm" not in spec.features
    v = (record.a @ attn.v_proj.weight.detach().t()).view(-1, spec.layout.n_kv_heads, d)
    halves = [h.repeat(1, 2, 1) for h in torch.chunk(v, 2, dim=1)]  # (n, kv, d) each
    v_wide = torch.cat(halves, -1).transpose(0, 1).repeat_interleave(spec.layout.groups, 0)
    z = record.probs @ v_wide  # (head, query, 2d)
    q1k1 = (attn.lambda_q1 * attn.lambda_k1).sum().exp()
    lam = (q1k1 - (attn.lambda_q2 * attn.lambda_k2).sum().exp() + attn.lambda_init).item()
    y = z[: heads // 2] - lam * z[heads // 2 :]  # (H/2, query, 2d)
    eps = model.config.rms_norm_eps
    normed = (1 - attn.lambda_init) * y * torch.rsqrt(y.pow(2).mean(-1, keepdim=True) + eps)
    w = attn.o_proj.weight.detach().view(-1, heads // 2, 2 * d)  # (model, H/2, 2d)
    expected = torch.einsum("jqc,mjc->jqm", normed, w)
    summed = record.updates[: heads // 2] + record.updates[heads // 2 :]
    torch.testing.assert_close(summed, expected, atol=ATOL, rtol=0)


def test_falcon_alibi_position_term_is_the_alibi_bias():
    """A tiny Falcon with ALiBi verifies; its layers' positions are ALiBi (handed cos and sin
    it does not use) and the position term is slope_h * key position / sqrt(d), slopes
    2^(-8 (h + 1) / H), added before Falcon's scaling."""
    torch.manual_seed(0)
    config = FalconConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                          alibi=True, vocab_size=64, max_position_embeddings=64)  # fmt: skip
    model = FalconForCausalLM(config).eval()
    model.config._attn_implementation = "eager"
    specs = verified_layers(family_for("falcon"), model)
    assert [s.positions for s in specs] == ["alibi", "alibi"]
    assert all("alibi" in s.features and s.rotate is None for s in specs)
    record = capture_attention(model, specs, IDS).record(1)
    n, heads, d = IDS.shape[0], 4, 8
    slopes = 2.0 ** (-8.0 * torch.arange(1, heads + 1) / heads)
    expected = slopes[:, None, None] * torch.arange(n).float()[None, None, :] / d**0.5
    position = record.terms["position"].expand(-1, n, -1)
    torch.testing.assert_close(position[record.allowed.expand(heads, -1, -1)],
                               expected.expand(-1, n, -1)[record.allowed.expand(heads, -1, -1)],
                               atol=1e-6, rtol=0)  # fmt: skip


@pytest.mark.parametrize("model_type", ["jetmoe", "diffllama", "deepseek_v2"])
def test_scaled_q_gives_uniform_attention_and_scaled_v_keeps_the_layer(model_type):
    """Interventions act on the adapters' heads: Q scaled to ~0 gives uniform attention over
    the allowed keys; V scaled leaves the layer's probabilities and changes the next's."""
    model, specs, base = _verified(model_type)
    out = run_modified(model, specs, IDS, 0, scale("Q", 1e-10), (0,))
    allowed = base.allowed.expand(base.n_heads, -1, -1)
    uniform = allowed.float() / allowed.sum(-1, keepdim=True)
    torch.testing.assert_close(out.probs[0], uniform, atol=1e-6, rtol=0)
    same = run_modified(model, specs, IDS, 0, identity, (0, 1))
    changed = run_modified(model, specs, IDS, 0, scale("V", 1e-3), (0, 1))
    assert torch.equal(changed.probs[0], same.probs[0])
    assert (changed.probs[1] - same.probs[1]).abs().max() > 1e-5


@pytest.mark.slow
@pytest.mark.parametrize(
    "model_type",
    ["jetmoe", "diffllama", "deepseek_v2", pytest.param("inkling2_text", marks=on_record)],
)
def test_adapted_zoo_model_builds_a_site(tmp_path, model_type):
    """The whole build (roles, induction probes on the adapter's heads, interventions)."""
    save_zoo_model(model_type, tmp_path / "model")
    sentences = tmp_path / "s.txt"
    sentences.write_text("the cat chased the mouse and the dog sat on the mat\n")
    out = tmp_path / "site"
    args = ["build", "--model", str(tmp_path / "model"), "--sentences", str(sentences),
            "--out", str(out), "--no-images"]  # fmt: skip
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    page = next(out.glob("s00*.html")).read_text(encoding="utf-8")
    assert 'data-key="attention-map"' in page and 'data-key="scaling-grid"' in page


@on_record
def test_inkling2_block_attention_is_the_models_own():
    """Inkling 2's blocks also attend over the residual stream's earlier block outputs
    (``BlockAttentionResidual``; through the interface from transformers 5.24, with no mask
    and not causal): those calls are no layer and nothing changes them, so the model routed
    through attnreport's function gives its own eager logits, also while V is scaled in a
    layer whose blocks read such attention."""
    model, specs, _ = _verified("inkling2_text")
    assert [s.attention for s in specs] == [b.self_attn for b in model.model.layers]
    with torch.no_grad():
        own = model(input_ids=IDS[None], use_cache=False).logits
        with interface.implementation(model, interface.NAME):
            routed = model(input_ids=IDS[None], use_cache=False).logits
    torch.testing.assert_close(routed, own, atol=ATOL, rtol=0)  # bias added fused: float32 units
    same = run_modified(model, specs, IDS, 0, identity, (0, 1))
    changed = run_modified(model, specs, IDS, 0, scale("V", 1e-3), (0, 1))
    assert torch.equal(changed.probs[0], same.probs[0])
    assert (changed.probs[1] - same.probs[1]).abs().max() > 1e-5


@on_record
def test_inkling2_sink_logit_per_query_is_in_its_softmax_and_its_maps():
    """Inkling 2 computes each head's sink logit from the query token (``sink_proj``): the
    probabilities over the keys and the sink's share are the softmax of the scores and that
    logit, computed here from the module's weights; the stored maps keep one logit per
    query, and the probabilities derived from them are the captured ones."""
    model, specs, record = _verified("inkling2_text")
    spec = specs[-1]
    assert "sinks" in spec.features
    record = capture_attention(model, specs, IDS).record(spec.layer)
    sinks = (record.a @ spec.attention.sink_proj.weight.detach().t()).t()  # (head, query)
    full = torch.cat([record.scores, sinks[..., None]], dim=-1).softmax(-1)
    torch.testing.assert_close(record.probs, full[..., :-1], atol=1e-6, rtol=0)
    torch.testing.assert_close(record.sink_probs, full[..., -1], atol=1e-6, rtol=0)
    _, maps = analyze_pass(model, specs, IDS, Settings(map_tokens=len(IDS)))
    stored = np.asarray(maps.sinks[-1])  # (head, query)
    np.testing.assert_allclose(stored, sinks.numpy(), rtol=1e-5, atol=1e-6)  # 6 digits kept
    for head in range(record.n_heads):
        for q in range(len(IDS)):
            derived = np.asarray(maps.probs[-1][head][q])
            np.testing.assert_allclose(
                derived, record.probs[head, q, : q + 1], atol=1e-3, rtol=0
            )  # 3-decimal scores
