"""Capture reproduces each family's attention exactly, through the real loading code."""

from __future__ import annotations

import contextlib

import torch

from attnreport.capture import capture_attention
from attnreport.models import load_model
from attnreport.models.layout import discover
from attnreport.records import TERM_NAMES
from attnreport.verification import verify_sentences

SENTENCES = ["the cat chased the mouse and the dog sat on the mat", "what does attention focus ?"]


def _load(directory):
    loaded = load_model(str(directory))
    specs = discover(loaded.family, loaded.model)
    ids = [torch.tensor(loaded.tokenizer(s).input_ids) for s in SENTENCES]
    return loaded, specs, ids


def test_three_checks_hold(tiny_model_dir):
    loaded, specs, ids = _load(tiny_model_dir)
    checks = verify_sentences(loaded.model, specs, ids)
    assert len(checks) == 3 + any(s.post_norm is not None for s in specs)  # + the norm's
    for check in checks:
        assert check.passed, (check.name, check.max_error, check.rule)
        assert check.dtype == "float32"
    assert checks[0].inner == max(len(i) for i in ids)  # softmax over the longest row
    assert checks[0].magnitude <= 1.0  # probabilities
    assert checks[1].inner == specs[0].layout.n_heads * specs[0].layout.head_dim
    assert checks[2].inner == specs[0].layout.head_dim and checks[2].roundings == 2


def test_probabilities_are_causal_and_normalised(tiny_model_dir):
    loaded, specs, ids = _load(tiny_model_dir)
    capture = capture_attention(loaded.model, specs, ids[0])
    n = len(ids[0])
    upper = torch.ones(n, n, dtype=torch.bool).triu(1)
    for record in capture.records():
        assert record.probs.shape == (loaded.model.config.num_attention_heads, n, n)
        assert torch.all(record.probs[:, upper] == 0)
        total = record.probs.sum(-1)  # over real tokens; a learned sink takes the rest
        if record.sink_probs is not None:
            assert torch.all(record.sink_probs > 0)
            total = total + record.sink_probs
        torch.testing.assert_close(total, torch.ones(record.probs.shape[:2]))
        assert not torch.any(record.allowed & upper)  # never a future token
        assert torch.all(record.allowed.diagonal())  # always itself
        assert set(record.terms) == set(TERM_NAMES)


def test_hooks_are_removed_even_when_the_pass_fails(tiny_model_dirs):
    loaded, specs, ids = _load(tiny_model_dirs["llama"])
    modules = list(loaded.model.modules())
    capture_attention(loaded.model, specs, ids[0])
    assert all(not m._forward_hooks and not m._forward_pre_hooks for m in modules)
    with contextlib.suppress(IndexError, RuntimeError):
        capture_attention(loaded.model, specs, torch.tensor([10_000]))  # out of vocabulary
    assert all(not m._forward_hooks and not m._forward_pre_hooks for m in modules)


def test_gqa_heads_share_keys(tiny_model_dirs):
    loaded, specs, ids = _load(tiny_model_dirs["llama"])
    record = capture_attention(loaded.model, specs, ids[0]).record(0)
    assert record.k.shape[0] == 2 and record.q.shape[0] == 6  # 3 query heads per kv head


def test_position_terms_per_family(tiny_model_dirs):
    for name, expect_zero in (("gpt2", True), ("llama", False), ("bloom", False)):
        loaded, specs, ids = _load(tiny_model_dirs[name])
        record = capture_attention(loaded.model, specs, ids[0]).record(1)
        is_zero = bool(torch.all(record.terms["position"] == 0))
        assert is_zero == expect_zero, name


def test_qwen2_bias_terms_are_nonzero(tiny_model_dirs):
    loaded, specs, ids = _load(tiny_model_dirs["qwen2"])
    record = capture_attention(loaded.model, specs, ids[0]).record(0)
    assert record.terms["bias"].abs().max() > 1e-3
    assert record.terms["query_only"].abs().max() > 1e-3
    # the bias term depends only on the target: identical across query rows
    torch.testing.assert_close(record.terms["bias"][:, 0, :], record.terms["bias"][:, -1, :])


def test_sliding_window_mask_is_the_models(tiny_model_dirs):
    loaded, specs, ids = _load(tiny_model_dirs["mistral"])
    record = capture_attention(loaded.model, specs, ids[0]).record(0)
    n = len(ids[0])
    window = torch.ones(n, n, dtype=torch.bool).tril() & ~torch.ones(n, n, dtype=torch.bool).tril(
        -4
    )
    assert torch.equal(record.allowed, window)
    assert torch.all(record.probs[:, ~window] == 0)
