"""Induction probes fit the model's context: R = 50 tokens per copy, or as many as fit."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from click.testing import CliRunner
from transformers import GPT2LMHeadModel

from attnreport.cli import main
from attnreport.errors import AttnReportError
from attnreport.probe_pass import probe_length
from attnreport.results import load
from tests.tiny_models import tiny_tokenizer


def test_probe_length_is_fifty_or_what_fits():
    assert probe_length(8192, bos=True) == 50
    assert probe_length(101, bos=True) == 50
    assert probe_length(100, bos=True) == 49
    assert probe_length(41, bos=False) == 20
    with pytest.raises(AttnReportError, match="too short for an induction probe"):
        probe_length(4, bos=True)


def test_a_short_context_model_gets_probes_that_fit(tmp_path, tiny_model_dirs):
    """A GPT-2 whose learned positions stop at 41 (a probe of 2 x 50 would index past its
    position table): its probes are 2 x 20 tokens and every head gets an induction score."""
    model = GPT2LMHeadModel.from_pretrained(tiny_model_dirs["gpt2"])
    config = model.config
    config.n_positions = 41
    torch.manual_seed(0)
    short = GPT2LMHeadModel(config).eval()
    folder = tmp_path / "short-gpt2"
    short.save_pretrained(folder)
    tiny_tokenizer(add_bos=False).save_pretrained(folder)
    sentences = tmp_path / "s.txt"
    sentences.write_text("the cat sat on the mat\n")
    out = tmp_path / "r"
    args = ["analyze", "--model", str(folder), "--sentences", str(sentences), "--out", str(out)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    results = load(out)
    assert results.set.probes is not None
    assert {len(p) for p in results.set.probes} == {40}
    assert all(p[:20] == p[20:] for p in results.set.probes)
    induction = results.set.head_roles.arrays()["induction"]
    assert np.isfinite(induction).all() and ((induction >= 0) & (induction <= 1)).all()
