"""bfloat16 and float16 models: the model runs in its dtype, every analysis in float32.

Every tiny family is loaded in bfloat16 through the real loading code (float32 weights
on disk, cast by ``load_model(dtype=...)``) and must pass the three ``verify`` checks
with the dtype's tolerances; the derived numbers (head updates, score terms) are
compared with an independent float64 computation from the captured tensors, which a
computation in the model's dtype would miss by orders of magnitude.
"""

from __future__ import annotations

import pytest
import torch
from click.testing import CliRunner

from attnreport.capture import capture_attention
from attnreport.cli import main
from attnreport.models import load_model
from attnreport.models.layout import discover
from attnreport.tolerance import describe, tolerance, unit_roundoff
from attnreport.verification import verify_sentences
from tests.tiny_models import FAMILY_NAMES

SENTENCES = ["the cat chased the mouse and the dog sat on the mat", "what does attention focus ?"]
ROPE_FAMILIES = tuple(n for n in FAMILY_NAMES if n not in ("gpt2", "bloom"))


def _load(directory, dtype: str):
    loaded = load_model(str(directory), dtype=dtype)
    specs = discover(loaded.family, loaded.model)
    ids = [torch.tensor(loaded.tokenizer(s).input_ids) for s in SENTENCES]
    return loaded, specs, ids


@pytest.mark.parametrize("name", FAMILY_NAMES)
def test_bfloat16_family_passes_verify(tiny_model_dirs, name):
    loaded, specs, ids = _load(tiny_model_dirs[name], "bfloat16")
    assert next(loaded.model.parameters()).dtype == torch.bfloat16
    checks = verify_sentences(loaded.model, specs, ids)
    for check in checks:
        assert check.passed, (name, check.name, check.max_error, check.rule)
        assert check.dtype == "bfloat16"
        bound = tolerance(torch.bfloat16, check.magnitude, check.inner, check.roundings)
        assert check.tolerance == pytest.approx(bound)
        assert check.rule == describe(torch.bfloat16, check.magnitude, check.inner, check.roundings)
        # the bound is the model's own rounding, not a loose catch-all: at most a few bf16 ulps
        assert check.tolerance <= (check.roundings + 1) * unit_roundoff(torch.bfloat16) * max(
            check.magnitude, 1e-30
        )
    assert checks[0].max_error == 0.0  # the same eager arithmetic, in the model's dtype


@pytest.mark.parametrize("name", ["llama", "gpt_oss", "gpt2"])
def test_derived_numbers_of_a_bfloat16_model_are_float32(tiny_model_dirs, name):
    """Updates and terms against float64 from the captured bf16 tensors: float32 accuracy."""
    loaded, specs, ids = _load(tiny_model_dirs[name], "bfloat16")
    capture = capture_attention(loaded.model, specs, ids[0])
    for spec, record in zip(specs, capture.records(), strict=True):
        assert record.dtype == torch.bfloat16
        for value in (record.updates, record.probs, record.x, *record.terms.values()):
            assert value.dtype == torch.float32 and value.device.type == "cpu"
        weight, _ = spec.out_projection()
        exact = torch.einsum("hqd,hdm->hqm", record.context.double(), weight.double())
        scale = exact.abs().max().item()
        error = (record.updates.double() - exact).abs().max().item()
        assert error <= 8 * unit_roundoff(torch.float32) * scale * spec.layout.head_dim**0.5
        assert error < unit_roundoff(torch.bfloat16) * scale / 100  # not a bf16 computation
        # probabilities and scores are the model's own bf16 values, held exactly
        assert torch.equal(record.probs, record.probs.bfloat16().float())


@pytest.mark.parametrize("name", ["llama", "qwen3", "gemma2", "gpt_neox", "gpt_oss"])
def test_rope_terms_of_a_bfloat16_model_sum_to_its_logit_in_float32(tiny_model_dirs, name):
    assert name in ROPE_FAMILIES
    loaded, specs, ids = _load(tiny_model_dirs[name], "bfloat16")
    for record in capture_attention(loaded.model, specs, ids[0]).records():
        allowed = record.allowed.expand_as(record.logits)
        error = (sum(record.terms.values()) - record.logits)[allowed].abs().max().item()
        scale = max(t.abs().max().item() for t in (record.logits, *record.terms.values()))
        # float32 rounding of d products, far below one bf16 rounding (2^-8 of the logit)
        assert error <= tolerance(torch.float32, scale, specs[0].layout.head_dim, 2)


def test_float16_verify_on_the_command_line(tiny_model_dirs, tmp_path):
    sentences = tmp_path / "sentences.txt"
    sentences.write_text("\n".join(SENTENCES) + "\n", encoding="utf-8")
    model = str(tiny_model_dirs["qwen3"])
    args = ["verify", "--model", model, "--sentences", str(sentences), "--dtype", "float16"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines() if line.startswith("ok  ")]
    assert len(lines) == 3
    for line in lines:  # each check prints its rule and numbers beside the error
        assert "u(float16)" in line and "x sqrt(" in line and "tolerance " in line


@pytest.mark.slow
@pytest.mark.default_model
def test_default_model_bfloat16_verify_passes(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the built-in sentences, not the example's attnreport.toml
    result = CliRunner().invoke(main, ["verify", "--model", "default", "--dtype", "bfloat16"])
    assert result.exit_code == 0, result.output
    assert "all 3 checks passed on 6 sentence(s)" in result.output
    assert result.output.count("u(bfloat16)") == 3
