"""A post-attention norm (Gemma 2 and 3, OLMo 2): each head's share of what the block adds.

The block adds ``y = g * z / rms(z)`` to the hidden state, not its output ``z``. Capture
finds the norm by what it reads (``models.probes``), and the update sizes are each head's
share of ``y``: checked here against the hidden state the model itself passes on (its
residual after attention minus the block's input), against a per-head split computed
from the model's own ``y / z``, and by ``verify``'s fourth check.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from attnreport.analyses.impact import block_impact_table, head_impact_table
from attnreport.capture import capture_attention
from attnreport.models import load_model
from attnreport.models.layout import discover
from attnreport.models.post_norm import decomposes, epsilon, gain, token_scale
from attnreport.verification import verify_sentences

TEXT = "the cat sat on the mat and the dog sat on the cat"
WITH_NORM = ("gemma2", "gemma3", "olmo2")


def _loaded(tiny_model_dirs, family):
    loaded = load_model(str(tiny_model_dirs[family]))
    ids = torch.tensor(loaded.tokenizer(TEXT).input_ids)
    return loaded.model, discover(loaded.family, loaded.model), ids


def _after_attention(model: nn.Module, ids: torch.Tensor) -> dict[int, torch.Tensor]:
    """layer -> the hidden state after the attention half of the block, x + y, read where the
    model hands it on: the input of the module that follows (Gemma's pre-feedforward norm,
    OLMo 2's MLP)."""
    seen: dict[int, torch.Tensor] = {}
    handles = []
    for i, block in enumerate(model.model.layers):
        after = getattr(block, "pre_feedforward_layernorm", None) or block.mlp

        def hook(_m, args, i=i):
            seen[i] = args[0][0].detach().float()

        handles.append(after.register_forward_pre_hook(hook))
    try:
        with torch.no_grad():
            model(input_ids=ids[None], use_cache=False)
    finally:
        for h in handles:
            h.remove()
    return seen


@pytest.mark.parametrize("family", WITH_NORM)
def test_the_heads_shares_add_up_to_what_the_block_adds(tiny_model_dirs, family):
    model, specs, ids = _loaded(tiny_model_dirs, family)
    assert all(s.post_norm is not None for s in specs)
    assert all("post_attention_norm" in s.features for s in specs)
    after = _after_attention(model, ids)
    for record in capture_attention(model, specs, ids).records(with_terms=False):
        assert record.out_scale is not None and record.post_out is not None
        added = after[record.layer] - record.x  # what the block added, as the model has it
        shares = record.added.sum(0) + record.out_bias * record.out_scale
        torch.testing.assert_close(shares, added, rtol=1e-4, atol=1e-5)
        torch.testing.assert_close(record.block_added, added, rtol=1e-4, atol=1e-5)
        # the same split from the model's own y / z, elementwise, where z is not tiny
        z, y = record.block_out.double(), record.post_out.double()
        keep = z.abs() > 1e-3 * z.abs().max()
        ratio = torch.where(keep, y / torch.where(keep, z, 1), 0)
        mine = record.added.double()
        theirs = record.updates.double() * ratio
        torch.testing.assert_close(mine[:, keep], theirs[:, keep], rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("family", WITH_NORM)
def test_update_sizes_are_the_shares_after_the_norm(tiny_model_dirs, family):
    model, specs, ids = _loaded(tiny_model_dirs, family)
    record = next(capture_attention(model, specs, ids).records(with_terms=False))
    table = head_impact_table(record)
    x = record.x.double()
    shares = record.added.double()
    expected = (shares.norm(dim=-1) / x.norm(dim=-1)).reshape(-1).numpy()
    np.testing.assert_allclose(table["magnitude"], expected, rtol=1e-6)
    before = (record.updates.double().norm(dim=-1) / x.norm(dim=-1)).reshape(-1).numpy()
    assert not np.allclose(table["magnitude"], before, rtol=1e-2)  # the norm changes them
    block = block_impact_table(record)
    np.testing.assert_allclose(
        block["magnitude"], (record.post_out.double().norm(dim=-1) / x.norm(dim=-1)).numpy(),
        rtol=1e-5,
    )  # fmt: skip


@pytest.mark.parametrize("family", WITH_NORM)
def test_verify_checks_the_shares_against_the_norms_output(tiny_model_dirs, family):
    model, specs, ids = _loaded(tiny_model_dirs, family)
    checks = verify_sentences(model, specs, [ids])
    post = [c for c in checks if "post-attention norm" in c.name]
    assert len(post) == 1 and checks[-1] is post[0]
    assert all(c.max_error <= c.tolerance for c in checks), checks
    assert post[0].max_error > 0 or post[0].magnitude > 0


@pytest.mark.parametrize("family", ["llama", "bloom", "gpt_neox"])
def test_a_model_without_one_has_none_and_three_checks(tiny_model_dirs, family):
    """Llama's norms read the residual; BLOOM's post_attention_layernorm reads the attention
    output with the residual already added, and GPT-NeoX adds both halves in parallel: none
    of them normalises what the output projection wrote."""
    model, specs, ids = _loaded(tiny_model_dirs, family)
    assert all(s.post_norm is None and "post_attention_norm" not in s.features for s in specs)
    record = next(capture_attention(model, specs, ids).records(with_terms=False))
    assert record.out_scale is None and torch.equal(record.added, record.updates)
    assert len(verify_sentences(model, specs, [ids])) == 3


def test_only_an_rms_norm_decomposes():
    torch.manual_seed(0)
    z = torch.randn(5, 16)
    rms = nn.RMSNorm(16, eps=1e-6)
    with torch.no_grad():
        rms.weight.uniform_(0.5, 1.5)
    assert epsilon(rms) == 1e-6
    torch.testing.assert_close(gain(rms, 16, z.device), rms.weight.detach())
    assert decomposes(rms, z, rms(z).detach())
    torch.testing.assert_close(z * token_scale(z, 1e-6, rms.weight.detach()), rms(z).detach())
    layer_norm = nn.LayerNorm(16)  # subtracts a mean: no per-token scale reproduces it
    assert not decomposes(layer_norm, z, layer_norm(z).detach())

    class NoEpsilon(nn.Module):
        def forward(self, x):
            return x / x.pow(2).mean(-1, keepdim=True).sqrt()

    assert epsilon(NoEpsilon()) is None and not decomposes(NoEpsilon(), z, NoEpsilon()(z))
