"""The BOS contrast: a run without a BOS captures every sentence once more with the
tokenizer's BOS first; its first-token focus matches the argmax of a plain capture."""

from __future__ import annotations

import torch
from click.testing import CliRunner

from attnreport import value_norms
from attnreport.capture import capture_attention
from attnreport.cli import main
from attnreport.models import load_model
from attnreport.models.layout import discover
from attnreport.results import load


def _analyse(tmp_path, model_dir, *extra):
    sentences = tmp_path / "s.txt"
    sentences.write_text("the cat chased the mouse\nwhat does attention focus ?\n")
    out = tmp_path / "r"
    args = ["analyze", "--out", str(out), "--model", str(model_dir),
            "--sentences", str(sentences), *extra]  # fmt: skip
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    return load(out)


def _check_contrast(results, model_dir, with_bos: bool) -> None:
    """Each contrast row against a plain capture of the sentence in the other condition:
    argmax share and mean first-token probability over queries 1..n-1, recomputed here."""
    table = results.set.bos_contrast.arrays()
    loaded = load_model(str(model_dir))
    specs = discover(loaded.family, loaded.model)
    bos = loaded.tokenizer.bos_token_id
    n_layers, n_heads = len(specs), specs[0].layout.n_heads
    assert len(table["layer"]) == 2 * n_layers * n_heads
    assert table["bos"].tolist() == [with_bos] * len(table["layer"])
    for listed in results.manifest.sentences:
        run = list(listed.token_ids)
        ids = torch.tensor([bos, *run] if with_bos else run[1:])
        assert with_bos or run[0] == bos
        capture = capture_attention(loaded.model, specs, ids)
        rows = table["sentence"] == listed.index
        for layer in range(n_layers):
            probs = capture.record(layer).probs.double()  # (head, query, key)
            top_is_first = probs[:, 1:].argmax(-1) == 0  # queries 1..n-1; ties: the earlier key
            here = rows & (table["layer"] == layer)
            for name, want in (
                ("first_focus", top_is_first.double().mean(-1)),
                ("first_prob", probs[:, 1:, 0].mean(-1)),
            ):
                got = torch.tensor(table[name][here], dtype=torch.float64)
                torch.testing.assert_close(got, want, atol=1e-6, rtol=0)
            assert table["n_first"][here].tolist() == [len(ids) - 1] * n_heads


def test_a_run_without_a_bos_is_contrasted_with_one(tmp_path, tiny_model_dirs):
    results = _analyse(tmp_path, tiny_model_dirs["llama"], "--bos", "never")
    assert not results.manifest.settings.extra["bos_added"]
    _check_contrast(results, tiny_model_dirs["llama"], with_bos=True)


def test_a_run_with_a_bos_is_contrasted_without_it(tmp_path, tiny_model_dirs):
    """Gemma's case: the tokenizer puts its BOS first, so the contrast takes it away and
    the sentence's own first token sits at position 0."""
    results = _analyse(tmp_path, tiny_model_dirs["llama"], "--bos", "always")
    assert results.manifest.settings.extra["bos_added"]
    _check_contrast(results, tiny_model_dirs["llama"], with_bos=False)


def test_value_norms_match_the_value_projection(tmp_path, tiny_model_dirs, monkeypatch):
    """Recomputed here from the value projection of a plain capture. They are collected
    in each sentence's own analysis pass: the run makes no pass of its own for them
    (``value_norms.stream_layers``, the extra pass, fails the test if called)."""

    def no_extra_pass(*_args, **_kwargs):
        raise AssertionError("the value norms made a pass of their own")

    monkeypatch.setattr(value_norms, "stream_layers", no_extra_pass)
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


def test_a_resumed_set_without_collected_value_norms_makes_their_pass(tiny_model_dirs):
    """Partials written before the analysis pass collected the value norms: the set
    makes the extra pass for every sentence, and it gives what the analysis collects."""
    from attnreport.config import Settings
    from attnreport.session import session_for
    from attnreport.study import analyze_sentence

    settings = Settings(model=str(tiny_model_dirs["llama"]))
    session = session_for(settings)
    collected = {
        s.index: analyze_sentence(session, s, settings).value_norms for s in session.sentences
    }
    separate = value_norms.value_norms(session).arrays()
    folded = value_norms.value_norms(session, collected).arrays()
    assert len(separate["layer"]) > 0
    for name in separate:
        torch.testing.assert_close(
            torch.tensor(folded[name], dtype=torch.float64),
            torch.tensor(separate[name], dtype=torch.float64), rtol=1e-6, atol=1e-7,
        )  # fmt: skip
