"""The BOS contrast: a run without a BOS captures every sentence once more with the
tokenizer's BOS first; its first-token focus matches the argmax of a plain capture."""

from __future__ import annotations

import torch
from click.testing import CliRunner

from attnreport.capture import capture_attention
from attnreport.cli import main
from attnreport.models import load_model
from attnreport.models.layout import discover
from attnreport.results import load


def test_bos_contrast_is_stored_and_matches_a_plain_capture(tmp_path, tiny_model_dirs):
    sentences = tmp_path / "s.txt"
    sentences.write_text("the cat chased the mouse\nwhat does attention focus ?\n")
    out = tmp_path / "r"
    args = ["analyze", "--out", str(out), "--model", str(tiny_model_dirs["llama"]),
            "--sentences", str(sentences), "--bos", "never"]  # fmt: skip
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    results = load(out)
    table = results.set.bos_contrast.arrays()
    loaded = load_model(str(tiny_model_dirs["llama"]))
    specs = discover(loaded.family, loaded.model)
    bos = loaded.tokenizer.bos_token_id
    n_layers, n_heads = len(specs), specs[0].layout.n_heads
    assert len(table["layer"]) == 2 * n_layers * n_heads
    for listed in results.manifest.sentences:
        ids = torch.tensor([bos, *listed.token_ids])
        capture = capture_attention(loaded.model, specs, ids)
        rows = table["sentence"] == listed.index
        for layer in range(n_layers):
            probs = capture.record(layer).probs  # (head, query, key)
            top_is_bos = probs[:, 1:].argmax(-1) == 0  # queries 1..n-1; ties to the earlier key
            want = top_is_bos.double().mean(-1)
            got = table["first_focus"][rows & (table["layer"] == layer)]
            torch.testing.assert_close(
                torch.tensor(got, dtype=torch.float64), want, atol=1e-6, rtol=0
            )
    assert not results.manifest.settings.extra["bos_added"]


def test_value_norms_match_the_value_projection(tmp_path, tiny_model_dirs):
    sentences = tmp_path / "s.txt"
    sentences.write_text("the cat chased the mouse\nwhat does attention focus ?\n")
    out = tmp_path / "r"
    args = ["analyze", "--out", str(out), "--model", str(tiny_model_dirs["llama"]),
            "--sentences", str(sentences)]  # fmt: skip
    assert CliRunner().invoke(main, args).exit_code == 0
    results = load(out)
    table = results.set.value_norms.arrays()
    loaded = load_model(str(tiny_model_dirs["llama"]))
    specs = discover(loaded.family, loaded.model)
    for listed in results.manifest.sentences:
        capture = capture_attention(loaded.model, specs, torch.tensor(listed.token_ids))
        for spec in specs:
            a = capture.raw[spec.layer].a.double()  # (n, model): what the attention reads
            w = spec.attention.v_proj.weight.double()
            v = (a @ w.T).reshape(a.shape[0], -1, spec.layout.head_dim)  # (n, kv_head, d)
            norms = v.norm(dim=-1)  # (n, kv_head)
            rows = (table["sentence"] == listed.index) & (table["layer"] == spec.layer)
            got_first = torch.tensor(table["first_norm"][rows], dtype=torch.float64)
            got_other = torch.tensor(table["other_norm"][rows], dtype=torch.float64)
            torch.testing.assert_close(got_first, norms[0], rtol=1e-4, atol=1e-6)
            torch.testing.assert_close(got_other, norms[1:].mean(0), rtol=1e-4, atol=1e-6)
