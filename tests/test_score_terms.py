"""What the study's pass reads of the score terms and the head updates, against the whole
tensors ``verify`` checks (issue 43: the pass makes neither).

The breakdown reads each term only at a row's first keys (``ScoreTerms.at``: dot
products over d at those keys alone) and ``head_impact`` reads each update only through
its norm and its dot product with the residual stream (``updates.update_numbers``). Both
are compared here, on tiny real architectures (RoPE with and without Q/K biases, ALiBi,
learned absolute positions, partial rotation, a post-attention norm), with the whole
(head, query, key) terms and the whole (head, query, model) updates, computed apart in
float64 from the captured float32 tensors.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnreport.analyses.attention_map import key_order
from attnreport.analyses.impact import head_impact_table
from attnreport.capture import capture_attention
from attnreport.models import load_model
from attnreport.models.layout import discover
from attnreport.records import TERM_NAMES, ScoreTerms

TEXT = "the cat sat on the mat and the dog sat on the cat"
# RoPE, RoPE + Q/K biases, partial rotation + biases, ALiBi + biases, absolute positions +
# biases, partial interleaved rotation, a post-attention norm
FAMILIES = ("llama", "qwen2", "gpt_neox", "bloom", "gpt2", "gptj", "gemma2")


def _records(tiny_model_dirs, family):
    loaded = load_model(str(tiny_model_dirs[family]))
    ids = torch.tensor(loaded.tokenizer(TEXT).input_ids)
    specs = discover(loaded.family, loaded.model)
    return list(capture_attention(loaded.model, specs, ids).records())


@pytest.mark.parametrize("family", FAMILIES)
def test_the_terms_at_the_first_keys_are_the_whole_terms_there(tiny_model_dirs, family):
    """``ScoreTerms.at`` at each row's first three keys, made before the whole terms,
    against the whole terms gathered there: the same values up to float32 rounding, and
    they sum to the model's logit there. Which terms are non-zero follows the
    architecture (not vacuous: biases and positions matter where the model has them)."""
    seen = dict.fromkeys(TERM_NAMES, False)
    for record in _records(tiny_model_dirs, family):
        assert isinstance(record.terms, ScoreTerms)
        keys = key_order(record.scores, record.allowed, 3).order
        at = record.terms.at(keys)  # first: nothing whole is made yet
        logits = record.logits.gather(-1, keys).double()
        scale = float(logits.abs().max()) + 1.0
        for name in TERM_NAMES:
            whole = record.terms[name].gather(-1, keys)
            assert at[name].shape == keys.shape and at[name].dtype == torch.float32
            torch.testing.assert_close(at[name], whole, rtol=1e-5, atol=1e-5 * scale)
            seen[name] |= bool(at[name].abs().max() > 1e-3)
        total = sum(at[name].double() for name in TERM_NAMES)
        torch.testing.assert_close(total, logits, rtol=1e-5, atol=1e-5 * scale)
    assert seen["content"]
    assert seen["bias"] == seen["query_only"] == (family in ("qwen2", "gpt_neox", "bloom", "gpt2"))
    assert seen["position"] == (family not in ("gpt2",))


@pytest.mark.parametrize("family", FAMILIES)
def test_head_impact_without_the_updates_is_their_norm_and_cosine(tiny_model_dirs, family):
    """``head_impact`` (norms and dot products through ``update_numbers``, no update
    made) against the whole updates in float64 (times the post-attention norm's scale
    where the model has one): magnitude and orientation within float32 rounding."""
    for record in _records(tiny_model_dirs, family):
        heads_in = record.heads_in.double().numpy()
        u = np.einsum("hqd,hdm->hqm", heads_in, record.out_weight.double().numpy())
        if record.out_scale is not None:
            u = u * record.out_scale.double().numpy()
        x = record.x.double().numpy()
        u_norm, x_norm = np.linalg.norm(u, axis=-1), np.linalg.norm(x, axis=-1)
        table = head_impact_table(record)
        magnitude = u_norm / x_norm
        cosine = (u * x).sum(-1) / (u_norm * x_norm)
        np.testing.assert_allclose(table["magnitude"], magnitude.reshape(-1), rtol=1e-5)
        np.testing.assert_allclose(table["orientation"], cosine.reshape(-1), atol=1e-5)
