"""Every family in the registry, on a tiny random model loaded through the real loading code.

For each: the interventions at the attention interface behave as the arithmetic says
(Q or K scaled to ~0 gives uniform attention over the allowed keys, plus the sink
where there is one; V scaled leaves the layer's probabilities bit-identical and
changes the next layer's), the model is left exactly as it was (attention
implementation, hooks, forwards), also after an exception inside the pass, and the
generic discovery finds what each architecture really has. The three ``verify``
checks and the site build run over the same matrix in test_capture.py and
test_family_builds.py.
"""

from __future__ import annotations

import pytest
import torch

from attnreport import interface
from attnreport.analyses.focus import focus_table
from attnreport.capture import capture_attention
from attnreport.interventions import identity, run_modified, scale
from attnreport.models import FAMILIES, load_model
from attnreport.models.layout import discover
from attnreport.sentences import tokenize_sentences
from tests.tiny_models import FAMILY_NAMES

SENTENCE = "the cat chased the mouse and the dog sat on the mat"

# The child of the attention module that must be found as the output projection.
OUT_PROJ = {"gpt2": "c_proj", "gpt_neox": "dense", "bloom": "dense", "openai-gpt": "c_proj"}
OUT_PROJ |= {"xglm": "out_proj", "gptj": "out_proj", "codegen": "out_proj", "falcon": "dense"}
OUT_PROJ["gpt_neo"] = "attention.out_proj"  # GPTNeoAttention wraps the module with projections
ABSOLUTE = {"gpt2", "openai-gpt", "gpt_neo", "xglm"}  # no position term in the score
QK_NORM = {"qwen3", "olmo2", "gemma3", "llama4_text"}
PARTIAL_ROTARY = {
    "phi3": 4,
    "gpt_neox": 2,
    "gptj": 4,
    "codegen": 4,
}  # rotated dims of the 8-dim heads
SLIDING = {"mistral", "gemma2", "gemma3", "gpt_oss", "gpt_neo"}


@pytest.fixture(scope="module", params=FAMILY_NAMES)
def family(request, tiny_model_dirs):
    loaded = load_model(str(tiny_model_dirs[request.param]))
    ids = torch.tensor(loaded.tokenizer(SENTENCE).input_ids)
    return request.param, loaded, discover(loaded.family, loaded.model), ids


def test_every_tiny_family_is_in_the_registry():
    from attnreport.models.families import zoo

    covered = {t for f in FAMILIES for t in f.model_types}
    tiny = {"gemma3_text" if n == "gemma3" else n for n in FAMILY_NAMES}
    assert tiny <= covered
    # adapters of hybrids and of JetMoE, DiffLlama, DeepSeek V2: verified in tests/test_zoo.py,
    # their numbers checked in tests/test_zoo_adapters.py
    assert covered - tiny <= set(zoo.HYBRID) | {"jetmoe", "diffllama", "deepseek_v2"}


def _expected_uniform(record, sinks: torch.Tensor | None, bias: torch.Tensor | None):
    """softmax over allowed keys of (score bias or 0), with the sink logit in the softmax."""
    n = record.n_tokens
    logits = torch.zeros(record.n_heads, n, n) if bias is None else bias.expand(-1, n, -1).clone()
    logits = logits.masked_fill(~record.allowed, -torch.inf)
    if sinks is None:
        return torch.softmax(logits, -1)
    full = torch.cat([logits, sinks.reshape(-1, 1, 1).expand(-1, n, 1)], dim=-1)
    return torch.softmax(full, -1)[..., :-1]


@pytest.mark.parametrize("target", ["Q", "K"])
def test_tiny_q_or_k_gives_uniform_attention_over_allowed_keys(family, target):
    name, loaded, specs, ids = family
    layer = len(specs) - 1
    base = capture_attention(loaded.model, specs, ids).record(layer)
    out = run_modified(loaded.model, specs, ids, layer, scale(target, 1e-10), (layer,))
    sinks = getattr(specs[layer].attention, "sinks", None)
    alibi = base.terms["position"][:, :1, :] if name == "bloom" else None  # not scaled
    expected = _expected_uniform(base, None if sinks is None else sinks.detach(), alibi)
    torch.testing.assert_close(out.probs[layer], expected, atol=1e-6, rtol=0)
    assert torch.all(out.probs[layer][:, ~base.allowed] == 0)  # the window is respected


def test_scaling_v_keeps_the_layer_and_changes_the_next(family):
    _, loaded, specs, ids = family
    base = run_modified(loaded.model, specs, ids, 0, identity, (0, 1))
    changed = run_modified(loaded.model, specs, ids, 0, scale("V", 1e-3), (0, 1))
    assert torch.equal(changed.probs[0], base.probs[0])
    assert (changed.probs[1] - base.probs[1]).abs().max() > 1e-5


def _state(model):
    configs = interface._configs(model)
    return (
        [c._attn_implementation for c in configs],
        sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in model.modules()),
        sum("forward" in vars(m) for m in model.modules()),
    )


def test_model_is_restored_even_when_the_pass_raises(family):
    _, loaded, specs, ids = family
    before = _state(loaded.model)
    assert before[0][0] == "eager" and before[1:] == (0, 0)

    def fail(_qkv):
        raise RuntimeError("inside the pass")

    capture_attention(loaded.model, specs, ids)
    assert _state(loaded.model) == before
    with pytest.raises(RuntimeError, match="inside the pass"):
        run_modified(loaded.model, specs, ids, 1, fail, (1,))
    assert _state(loaded.model) == before
    assert not interface._ACTIVE


def test_discovery_finds_what_the_architecture_has(family):
    name, loaded, specs, ids = family
    spec = specs[0]
    children = dict(spec.attention.named_modules())
    assert children[OUT_PROJ.get(name, "o_proj")] is spec.out_proj
    assert ("qk_norm" in spec.features) == (name in QK_NORM)
    assert ("partial_rotary" in spec.features) == (name in PARTIAL_ROTARY)
    assert ("sliding_window" in {f for s in specs for f in s.features}) == (name in SLIDING)
    assert ("sinks" in spec.features) == (name == "gpt_oss")
    assert ("softcap" in spec.features) == (name == "gemma2")
    record = capture_attention(loaded.model, specs, ids).record(0)
    if name in QK_NORM:
        assert torch.all(record.terms["bias"] == 0) and torch.all(record.terms["query_only"] == 0)
    if name in PARTIAL_ROTARY:  # dims past the rotary width are not rotated
        rotated = PARTIAL_ROTARY[name]
        assert torch.equal(record.q_raw[..., rotated:], record.q[..., rotated:])
        assert not torch.allclose(record.q_raw[:, 1:, :rotated], record.q[:, 1:, :rotated])
    if name not in ABSOLUTE:
        assert record.terms["position"].abs().max() > 1e-4


def test_probed_biases_are_the_projection_biases(tiny_model_dirs):
    """The zero-input probe recovers b_q and b_k: checked against the modules' own biases."""
    loaded = load_model(str(tiny_model_dirs["qwen2"]))
    spec = discover(loaded.family, loaded.model)[1]
    attn = spec.attention
    torch.testing.assert_close(spec.q_bias, attn.q_proj.bias.view(4, 8), atol=1e-6, rtol=0)
    torch.testing.assert_close(spec.k_bias, attn.k_proj.bias.view(2, 8), atol=1e-6, rtol=0)
    loaded = load_model(str(tiny_model_dirs["gpt2"]))
    spec = discover(loaded.family, loaded.model)[0]
    b_q, b_k, _ = spec.attention.c_attn.bias.split(32)
    torch.testing.assert_close(spec.q_bias, b_q.view(4, 8), atol=1e-6, rtol=0)
    torch.testing.assert_close(spec.k_bias, b_k.view(4, 8), atol=1e-6, rtol=0)


def test_softcap_scores_are_capped_logits(tiny_model_dirs):
    loaded = load_model(str(tiny_model_dirs["gemma2"]))
    specs = discover(loaded.family, loaded.model)
    ids = torch.tensor(loaded.tokenizer(SENTENCE).input_ids)
    record = capture_attention(loaded.model, specs, ids).record(1)
    cap = loaded.model.config.attn_logit_softcapping
    assert record.softcap == cap
    assert record.scaling == loaded.model.config.query_pre_attn_scalar**-0.5
    allowed = record.allowed.expand_as(record.scores)
    capped = cap * torch.tanh(record.logits / cap)
    torch.testing.assert_close(record.scores[allowed], capped[allowed], atol=1e-6, rtol=0)
    assert record.logits[allowed].abs().max() > cap  # the cap really bends these logits


def test_sliding_layers_mask_outside_the_window(tiny_model_dirs):
    loaded = load_model(str(tiny_model_dirs["gemma2"]))
    specs = discover(loaded.family, loaded.model)
    ids = torch.tensor(loaded.tokenizer(SENTENCE).input_ids)
    n = len(ids)
    causal = torch.ones(n, n, dtype=torch.bool).tril()
    window = causal & ~torch.ones(n, n, dtype=torch.bool).tril(-4)
    records = list(capture_attention(loaded.model, specs, ids).records(False))
    assert [r.sliding_window for r in records] == [4, None, 4]
    assert [s.window for s in specs] == [4, None, 4]  # what the manifest records per layer
    assert [torch.equal(r.allowed, window) for r in records] == [True, False, True]
    assert torch.equal(records[1].allowed, causal)
    focus = focus_table(records[0])
    seen = records[0].allowed[1:, 0]  # queries 1..3 see token 0; later ones do not
    expected = records[0].probs[:, 1:, 0][:, seen].double().mean(1)
    torch.testing.assert_close(torch.from_numpy(focus["first_prob"]), expected)
    assert focus["n_first"].tolist() == [3] * records[0].n_heads  # the pooling weight
    assert focus_table(records[1])["n_first"].tolist() == [n - 1] * records[1].n_heads


def test_sink_share_is_the_sink_probability(tiny_model_dirs):
    loaded = load_model(str(tiny_model_dirs["gpt_oss"]))
    specs = discover(loaded.family, loaded.model)
    ids = torch.tensor(loaded.tokenizer(SENTENCE).input_ids)
    record = capture_attention(loaded.model, specs, ids).record(0)
    focus = focus_table(record)
    expected = 1 - record.probs[:, 1:].double().sum(-1).mean(1)
    torch.testing.assert_close(torch.from_numpy(focus["sink_share"]), expected, atol=1e-6, rtol=0)
    assert focus["sink_share"].min() > 0


@pytest.mark.parametrize(("mode", "starts"), [("auto", True), ("never", False), ("always", True)])
def test_bos_modes(tiny_model_dirs, mode, starts):
    loaded = load_model(str(tiny_model_dirs["gemma3"]))  # its tokenizer adds <s>, as Gemma's does
    bos = loaded.tokenizer.bos_token_id
    (sentence,) = tokenize_sentences([SENTENCE], loaded.tokenizer, 128, bos=mode)
    assert (sentence.token_ids[0] == bos) == starts
    assert sentence.token_ids.count(bos) == int(starts)


def test_manifest_records_features_and_bos(tmp_path, tiny_model_dirs):
    import json

    from click.testing import CliRunner

    from attnreport.cli import main

    sentences = tmp_path / "s.txt"
    sentences.write_text("the cat sat on the mat\nwhat does attention focus ?\n")
    args = ["analyze", "--model", str(tiny_model_dirs["gemma3"]), "--sentences", str(sentences)]
    result = CliRunner().invoke(main, [*args, "--out", str(tmp_path / "r"), "--bos", "never"])
    assert result.exit_code == 0, result.output
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    assert manifest["settings"]["bos"] == "never" and manifest["settings"]["bos_added"] is False
    assert manifest["model"]["positional"] == "rope"
    features = manifest["model"]["features"]
    assert {"gqa", "qk_norm", "sliding_window", "post_attention_norm"} <= set(features)
    assert "bos" not in features and "softcap" not in features
    assert all(s["token_ids"][0] != 1 for s in manifest["sentences"])  # <s> is id 1
    config = json.loads((tiny_model_dirs["gemma3"] / "config.json").read_text())
    windows = {
        str(layer): config["sliding_window"]
        for layer, kind in enumerate(config["layer_types"])
        if kind == "sliding_attention"
    }
    assert windows and manifest["model"]["layer_windows"] == windows
