"""Interventions are real passes whose effects match what the arithmetic predicts."""

from __future__ import annotations

import pytest
import torch

from attnreport.capture import capture_attention
from attnreport.interventions import (
    identity,
    mean_grid,
    mean_over_positions,
    run_modified,
    scale,
    scaling_grid,
)
from attnreport.models import load_model
from attnreport.models.layout import discover

SENTENCE = "the cat chased the mouse and the dog sat on the mat"


@pytest.fixture(scope="module")
def llama(tiny_model_dirs):
    loaded = load_model(str(tiny_model_dirs["llama"]))
    ids = torch.tensor(loaded.tokenizer(SENTENCE).input_ids)
    return loaded.model, discover(loaded.family, loaded.model), ids


def uniform_causal(n_heads: int, n: int) -> torch.Tensor:
    rows = torch.ones(n, n).tril()
    return (rows / rows.sum(-1, keepdim=True)).expand(n_heads, n, n)


@pytest.mark.parametrize("target", ["Q", "K"])
def test_tiny_q_or_k_gives_uniform_causal_attention(llama, target):
    model, specs, ids = llama
    out = run_modified(model, specs, ids, 1, scale(target, 1e-10), (1,))
    probs = out.probs[1]
    torch.testing.assert_close(probs, uniform_causal(probs.shape[0], len(ids)), atol=1e-6, rtol=0)


def test_scaling_v_keeps_this_layer_but_changes_the_next(llama):
    model, specs, ids = llama
    base = run_modified(model, specs, ids, 0, identity, (0, 1))
    changed = run_modified(model, specs, ids, 0, scale("V", 1e-3), (0, 1))
    assert torch.equal(changed.probs[0], base.probs[0])
    assert (changed.probs[1] - base.probs[1]).abs().max() > 1e-4


def test_identity_pass_equals_the_plain_capture(llama):
    model, specs, ids = llama
    plain = capture_attention(model, specs, ids)
    out = run_modified(model, specs, ids, 1, identity, (1, 2))
    torch.testing.assert_close(out.probs[2], plain.record(2).probs, atol=1e-6, rtol=0)
    torch.testing.assert_close(  # the capture keeps the last position's logits only
        out.log_probs[-1:], torch.log_softmax(plain.logits, -1), atol=1e-5, rtol=0
    )


def test_mean_key_gives_uniform_causal_attention(llama):
    model, specs, ids = llama
    probs = run_modified(model, specs, ids, 2, mean_over_positions("K"), (2,)).probs[2]
    torch.testing.assert_close(probs, uniform_causal(probs.shape[0], len(ids)), atol=1e-6, rtol=0)


def test_mean_query_ranks_keys_the_same_way_in_every_row(llama):
    model, specs, ids = llama
    probs = run_modified(model, specs, ids, 1, mean_over_positions("Q"), (1,)).probs[1]
    n = len(ids)
    for head in probs:
        last = head[-1]
        for i in range(1, n):
            row_order = torch.argsort(head[i, : i + 1], descending=True, stable=True)
            expected = torch.argsort(last[: i + 1], descending=True, stable=True)
            assert torch.equal(row_order, expected)


def test_grids_have_every_cell_and_kl(llama):
    model, specs, ids = llama
    base, cells = scaling_grid(model, specs, ids, 1, (0.5, 1e-3))
    assert [(c.target, c.setting) for c in cells] == [
        (t, e) for t in ("QK", "V") for e in (0.5, 1e-3)
    ]
    assert set(base.probs) == {1, 2}
    assert all(c.kl.shape == (len(ids),) and torch.all(c.kl >= 0) for c in cells)
    assert cells[-1].kl.max() > 0  # scaling V by 1e-3 changes the prediction
    baselines, mean_cells = mean_grid(model, specs, {0: ids, 3: ids[:5]}, 2)
    assert set(baselines) == {0, 3} and len(mean_cells) == 6


@pytest.mark.parametrize("family", ["llama", "bloom", "gpt2"])
def test_replaying_earlier_blocks_gives_the_same_numbers(tiny_model_dirs, family):
    loaded = load_model(str(tiny_model_dirs[family]))
    model, specs = loaded.model, discover(loaded.family, loaded.model)
    ids = torch.tensor(loaded.tokenizer(SENTENCE).input_ids)
    base = run_modified(model, specs, ids, 1, identity, (1,))
    assert len(base.prefix) == 1
    full = run_modified(model, specs, ids, 1, scale("K", 1e-3), (1,))
    replayed = run_modified(model, specs, ids, 1, scale("K", 1e-3), (1,), base.prefix)
    assert torch.equal(full.probs[1], replayed.probs[1])
    assert torch.equal(full.log_probs, replayed.log_probs)
    assert all("forward" not in vars(block) for block in [s.block for s in specs])
