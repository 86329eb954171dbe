"""Mean replacement before the rotary rotation against an independent computation on a
tiny Llama: k_pre = W_k a, its mean over positions, rotated per position with RoPE written
out here (rotate_half), scored against the rotated q."""

from __future__ import annotations

import pytest
import torch

from attnreport.capture import capture_attention
from attnreport.interventions import mean_grid_before_rotation
from attnreport.models import load_model
from attnreport.models.layout import discover

SENTENCE = "the cat sat on the mat and the dog sat on the log"
LAYER = 1


@pytest.fixture(scope="module")
def llama(tiny_model_dirs):
    loaded = load_model(str(tiny_model_dirs["llama"]))
    ids = torch.tensor(loaded.tokenizer(SENTENCE).input_ids)
    return loaded.model, discover(loaded.family, loaded.model), ids


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def rope(config, n: int, d: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(n, d) cos and sin of the plain RoPE of ``config`` (no scaling)."""
    params = getattr(config, "rope_parameters", None) or {}
    theta = params.get("rope_theta") or getattr(config, "rope_theta", 10000.0)
    inv_freq = 1.0 / (theta ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    angles = torch.arange(n, dtype=torch.float64)[:, None] * inv_freq[None]  # (n, d/2)
    emb = torch.cat((angles, angles), dim=-1)
    return emb.cos(), emb.sin()


def expected_probs(model, specs, ids, target: str) -> torch.Tensor:
    """(head, query, key) attention with q or k replaced by its pre-rotation mean."""
    raw = capture_attention(model, specs, ids).raw[LAYER]
    attn, config = specs[LAYER].attention, model.config
    n, d = len(ids), specs[LAYER].layout.head_dim
    a = raw.a.double()
    q = (a @ attn.q_proj.weight.double().T).reshape(n, -1, d).transpose(0, 1)  # (head, n, d)
    k = (a @ attn.k_proj.weight.double().T).reshape(n, -1, d).transpose(0, 1)  # (kv, n, d)
    if target == "K":
        k = k.mean(dim=1, keepdim=True).expand_as(k)
    else:
        q = q.mean(dim=1, keepdim=True).expand_as(q)
    cos, sin = rope(config, n, d)
    q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
    k = k.repeat_interleave(q.shape[0] // k.shape[0], dim=0)  # grouped-query heads
    scores = q @ k.transpose(1, 2) / d**0.5
    causal = torch.ones(n, n, dtype=torch.bool).tril()
    return torch.softmax(scores.masked_fill(~causal, float("-inf")), dim=-1)


@pytest.mark.parametrize("target", ["K", "Q"])
def test_mean_before_rotation_matches_an_independent_computation(llama, target):
    model, specs, ids = llama
    cells = mean_grid_before_rotation(model, specs, {0: ids}, LAYER)
    assert [(c.target, c.setting) for c in cells] == [("Q", 0), ("K", 0)]
    cell = next(c for c in cells if c.target == target)
    got = cell.outcome.probs[LAYER].double()
    torch.testing.assert_close(got, expected_probs(model, specs, ids, target), atol=1e-5, rtol=0)
    assert cell.kl.shape == (len(ids),) and bool((cell.kl >= 0).all())


def test_mean_key_before_rotation_is_not_uniform(llama):
    """The point of the second reading: keys keep their positions, so rows are not flat."""
    model, specs, ids = llama
    cell = mean_grid_before_rotation(model, specs, {0: ids}, LAYER)[1]
    probs = cell.outcome.probs[LAYER]
    n = len(ids)
    uniform = torch.ones(n, n).tril() / torch.arange(1, n + 1)[:, None]
    assert (probs - uniform).abs().max() > 1e-3
