"""The Python API on model objects: ``analyze`` and ``verify`` on a model the caller holds.

``analyze`` on a model object gives what ``attnreport analyze`` gives on the same model's
folder (within ``compare``'s tolerance; only the fingerprint differs, by design); a tiny
model of each family route (interface, adapter, hybrid) goes through it, its maps equal to
transformers' own eager ``output_attentions`` of the object; a model moved to bfloat16, or
with a LoRA-style adapter merged into its weights, is analysed as it is in memory, without
being saved; the model is left in its mode and attention implementation. Bad input is
refused with the command line's one-line message, before anything is written.
"""

from __future__ import annotations

import copy
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
from click.testing import CliRunner
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import (
    AutoModelForCausalLM,
    AutoTokenizer,
    BertConfig,
    BertForMaskedLM,
    PreTrainedTokenizerFast,
    T5Config,
    T5ForConditionalGeneration,
)

import attnreport
from attnreport.cli import main
from attnreport.models.families import family_for
from attnreport.results import load
from attnreport.results.compare import Tolerance, compare_results
from tests.tiny_models import WORDS, _configs, _perturb_attention, tiny_tokenizer
from tests.zoo_models import build_zoo_model

SENTENCES = ["the cat sat on the mat", "the dog chased the mouse"]
# The maps keep each score to 3 decimals (schema 9): a score off by at most half a unit,
# 5e-4, moves a probability derived from its row by at most e^(2 * 5e-4) - 1 ~ 1e-3 of it
TOL = 1e-3


def cli(*args: str) -> tuple[int, str]:
    """(exit code, last line of stderr: the error) of the command line."""
    done = CliRunner().invoke(main, list(args))
    return done.exit_code, (done.stderr.splitlines() or [""])[-1]


def tiny(name: str, seed: int = 0) -> torch.nn.Module:
    """The tiny ``name`` model of ``tests.tiny_models``, built in memory (never saved)."""
    config, cls = _configs()[name]
    torch.manual_seed(seed)
    model = cls(config).eval()
    _perturb_attention(model)
    return model


def own_probs(model: torch.nn.Module, token_ids) -> list[np.ndarray]:
    """transformers' eager ``output_attentions`` of (a copy of) ``model``: one
    (head, query, key) array per attention layer."""
    reference = copy.deepcopy(model)
    reference.set_attn_implementation("eager")
    with torch.no_grad():
        out = reference(input_ids=torch.tensor([token_ids]), output_attentions=True, use_cache=False)  # fmt: skip
    return [a[0].double().numpy() for a in out.attentions]


def assert_maps_are_the_models(study, model, atol: float = TOL) -> None:
    """Every sentence's kept probabilities equal ``model``'s own, layer by layer."""
    for listed, sentence in zip(study.results.manifest.sentences, study.results.sentences, strict=True):  # fmt: skip
        own = own_probs(model, listed.token_ids)
        assert len(own) == len(sentence.attention.layer_numbers)
        for index, triangles in enumerate(sentence.attention.probs):
            for head, triangle in enumerate(triangles):
                for query, row in enumerate(triangle):
                    expected = own[index][head, query, : query + 1]
                    np.testing.assert_allclose(np.array(row, float), expected, atol=atol, rtol=0)


@pytest.fixture
def nothing_written(tmp_path, monkeypatch):
    """Run the test in an empty folder with a temporary folder of its own; ``check()``
    then asserts that nothing was written to either (not even a file written and
    removed: their modification times are unchanged), ``check(left=True)`` only that
    nothing was left there (a successful ``analyze`` works in a temporary folder)."""
    here, scratch = tmp_path / "cwd", tmp_path / "tmp"
    here.mkdir()
    scratch.mkdir()
    monkeypatch.chdir(here)
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    times = [here.stat().st_mtime_ns, scratch.stat().st_mtime_ns]

    def check(left: bool = False) -> None:
        assert list(here.iterdir()) == [] and list(scratch.iterdir()) == []
        if not left:
            assert [here.stat().st_mtime_ns, scratch.stat().st_mtime_ns] == times

    return check


def test_analyze_of_a_model_object_is_the_cli_on_its_folder(tiny_model_dirs, tmp_path):
    folder = tiny_model_dirs["llama"]
    (tmp_path / "s.txt").write_text("\n".join(SENTENCES) + "\n")
    code, err = cli("analyze", "--model", str(folder), "--sentences", str(tmp_path / "s.txt"), "--out", str(tmp_path / "cli"))  # fmt: skip
    assert code == 0, err
    model = AutoModelForCausalLM.from_pretrained(folder)  # transformers' default: sdpa
    study = attnreport.analyze(model, AutoTokenizer.from_pretrained(folder), SENTENCES, progress=False)  # fmt: skip
    expected = load(tmp_path / "cli")
    m = study.results.manifest.model
    # the digest of the weights in memory is not that of the files; set it aside, and
    # every number agrees within compare's tolerance
    assert m.fingerprint != expected.manifest.model.fingerprint
    same = replace(m, fingerprint=expected.manifest.model.fingerprint)
    actual = replace(study.results, manifest=replace(study.results.manifest, model=same))
    assert compare_results(expected, actual, Tolerance(1e-3, 1e-4)).problems == []
    assert (m.name, m.source, expected.manifest.model.source) == (folder.name, "python", "directory")  # fmt: skip
    assert m.fingerprint.startswith("weights-sha256:") and m.attn_implementation == "eager"
    assert model.config._attn_implementation == "sdpa"  # put back


@pytest.mark.parametrize("route", ["interface", "adapter", "hybrid"])
def test_a_tiny_model_of_each_family_route_goes_through_the_api(route):
    if route == "hybrid":
        model, why = build_zoo_model("qwen3_next", vocab_size=len(WORDS))
        assert model is not None, why
    else:
        model = tiny("llama" if route == "interface" else "gpt_neo")
    study = attnreport.analyze(model, tiny_tokenizer(), SENTENCES, progress=False)
    if route == "hybrid":  # block 0 is linear attention, block 1 attention
        assert [f.attention for f in study.results.manifest.model.layers] == [False, True]
        assert study.results.sentences[0].attention.layer_numbers == (1,)
    else:
        assert family_for(model.config.model_type).route == route
    assert_maps_are_the_models(study, model)


def test_a_model_moved_to_bfloat16_is_analysed_without_saving_it(tiny_model_dirs, nothing_written):  # fmt: skip
    folder = tiny_model_dirs["llama"]
    listing = sorted(p.name for p in folder.iterdir())
    model = AutoModelForCausalLM.from_pretrained(folder).to(torch.bfloat16)
    weights = [p.detach().clone() for p in model.parameters()]
    study = attnreport.analyze(model, AutoTokenizer.from_pretrained(folder), SENTENCES, progress=False)  # fmt: skip
    assert study.results.manifest.model.dtype == "bfloat16"
    assert_maps_are_the_models(study, model, atol=2e-2)  # bf16 probabilities: 8 bits
    assert all(torch.equal(a, b) for a, b in zip(weights, model.parameters(), strict=True))
    checks = attnreport.verify(model, AutoTokenizer.from_pretrained(folder), SENTENCES)
    assert len(checks) >= 3 and all(c.passed and c.dtype == "bfloat16" for c in checks)
    assert sorted(p.name for p in folder.iterdir()) == listing
    nothing_written(left=True)


def test_a_model_spread_by_device_map_gives_the_plain_results(tiny_model_dirs, tmp_path):
    """Loaded by the caller with accelerate's ``device_map`` and 60% of its size allowed in
    CPU memory: the other blocks are offloaded to disk (``meta`` weights between calls).
    The study and the weights' digest, read through accelerate's hooks, are the plain
    model's."""
    folder = tiny_model_dirs["llama"]
    plain = AutoModelForCausalLM.from_pretrained(folder)
    size = sum(p.numel() * p.element_size() for p in plain.parameters())
    placed = AutoModelForCausalLM.from_pretrained(
        folder, device_map="auto", max_memory={"cpu": int(size * 0.6)}, offload_folder=str(tmp_path)
    )
    assert set(placed.hf_device_map.values()) == {"cpu", "disk"}
    tokenizer = AutoTokenizer.from_pretrained(folder)
    a, b = (attnreport.analyze(m, tokenizer, SENTENCES, progress=False) for m in (plain, placed))
    assert b.results.manifest.model.device == "device_map: cpu, disk"
    assert b.results.manifest.model.fingerprint == a.results.manifest.model.fingerprint
    assert compare_results(a.results, b.results).problems == []


def test_a_merged_lora_adapter_is_analysed_as_merged():
    """W_q + B A (rank 2) merged into one layer's query projection, in memory: the maps are
    the merged model's own, and differ from the base model's."""
    base = tiny("llama")
    merged = copy.deepcopy(base)
    torch.manual_seed(1)
    q_proj = merged.model.layers[1].self_attn.q_proj
    lora_a, lora_b = torch.randn(2, q_proj.in_features), torch.randn(q_proj.out_features, 2)
    with torch.no_grad():
        q_proj.weight += 0.5 * lora_b @ lora_a
    studies = [attnreport.analyze(m, tiny_tokenizer(), SENTENCES, progress=False) for m in (base, merged)]  # fmt: skip
    assert_maps_are_the_models(studies[1], merged)
    before, after = (s.results.sentences[0].attention.probs for s in studies)
    assert before[0] == after[0]  # layer 0 is not changed
    moved = max(abs(a - b) for h0, h1 in zip(before[1], after[1], strict=True) for r0, r1 in zip(h0, h1, strict=True) for a, b in zip(r0, r1, strict=True))  # fmt: skip
    assert moved > 0.05
    fingerprints = {s.results.manifest.model.fingerprint for s in studies}
    assert len(fingerprints) == 2


def test_the_model_is_left_in_its_mode_and_attention_implementation():
    model = tiny("qwen3")
    model.set_attn_implementation("sdpa")
    model.train()
    attnreport.analyze(model, tiny_tokenizer(), SENTENCES[:1], progress=False)
    assert all(m.training for m in model.modules())
    assert model.config._attn_implementation == "sdpa"
    with pytest.raises(attnreport.AttnReportError):
        attnreport.analyze(model, wide_tokenizer(), ["the zebra sat"], progress=False)
    assert all(m.training for m in model.modules()) and model.config._attn_implementation == "sdpa"  # fmt: skip


def test_progress_goes_to_stderr_and_the_library_prints_nothing(capsys):
    attnreport.analyze(tiny("gpt2"), tiny_tokenizer(), SENTENCES[:1])
    out, err = capsys.readouterr()
    assert out == ""
    assert "Capturing sentences" in err and "Running interventions" in err


def test_verify_gives_the_checks_the_cli_prints(tiny_model_dirs, tmp_path):
    folder = tiny_model_dirs["gemma2"]
    (tmp_path / "s.txt").write_text("\n".join(SENTENCES) + "\n")
    done = CliRunner().invoke(main, ["verify", "--model", str(folder), "--sentences", str(tmp_path / "s.txt")])  # fmt: skip
    assert done.exit_code == 0, done.output
    model = AutoModelForCausalLM.from_pretrained(folder)
    checks = attnreport.verify(model, AutoTokenizer.from_pretrained(folder), SENTENCES)
    printed = [line for line in done.stdout.splitlines() if line.startswith(("ok", "FAIL"))]
    assert printed == [f"ok   {c.name}: max error {c.max_error:.3g}, tolerance {c.rule}" for c in checks]  # fmt: skip


# Bad input: the API raises AttnReportError with the line the command line prints.


def wide_tokenizer() -> PreTrainedTokenizerFast:
    """The tiny models' tokenizer with one word more than their vocabulary: "zebra"."""
    vocab = {word: i for i, word in enumerate([*WORDS, "zebra"])}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", bos_token="<s>")


def saved(model: torch.nn.Module, tokenizer, folder: Path) -> Path:
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


ENCODER = lambda: BertForMaskedLM(BertConfig(vocab_size=len(WORDS), hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64))  # noqa: E731  # fmt: skip
ENCODER_DECODER = lambda: T5ForConditionalGeneration(T5Config(vocab_size=len(WORDS), d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4))  # noqa: E731  # fmt: skip


@pytest.mark.parametrize(
    ("make", "tokenizer", "message"),
    [
        (
            ENCODER,
            tiny_tokenizer,
            "the model is BertForMaskedLM, an encoder: its tokens attend to the whole text, before and after them; attnreport reads causal decoders",
        ),  # fmt: skip
        (
            ENCODER_DECODER,
            tiny_tokenizer,
            "the model is T5ForConditionalGeneration, an encoder-decoder (an encoder reads the input, a decoder writes the output); attnreport reads causal decoders",
        ),  # fmt: skip
        (
            lambda: tiny("llama"),
            wide_tokenizer,
            f"the tokenizer does not match the model: sentence 1 has token id {len(WORDS)}, but the model's vocabulary has {len(WORDS)} entries; use the model's own tokenizer",
        ),  # fmt: skip
    ],
    ids=["encoder", "encoder-decoder", "mismatched-tokenizer"],
)
def test_a_refused_model_is_the_clis_one_line(make, tokenizer, message, tmp_path, nothing_written):  # fmt: skip
    model, sentences = make(), ["the zebra sat"]
    with pytest.raises(attnreport.AttnReportError) as err:
        attnreport.analyze(model, tokenizer(), sentences, progress=False)
    assert str(err.value).startswith(message)
    nothing_written()
    scratch = Path(tempfile.mkdtemp(prefix="api-cli-"))
    try:
        (scratch / "s.txt").write_text("the zebra sat\n")
        folder = saved(model, tokenizer(), scratch / "model")
        code, stderr = cli("analyze", "--model", str(folder), "--sentences", str(scratch / "s.txt"), "--out", str(scratch / "out"))  # fmt: skip
        # the same line, naming the model as each caller knows it
        message = str(err.value)
        named = (
            message.replace("the model", str(folder), 1)
            if " is " in message.split(":")[0]
            else message
        )
        assert code == 1 and stderr == f"error: {named}"
        assert not (scratch / "out").exists()
    finally:
        shutil.rmtree(scratch)


@pytest.mark.parametrize(
    ("call", "flags", "message"),
    [
        (
            dict(sentences=[]),
            ["--sentences", "{empty}"],
            "{origin} has no sentences (it is empty or only blank lines)",
        ),  # fmt: skip
        (
            dict(map_token=8),
            ["--config", "{config}"],
            "{origin}: unknown key 'map_token'; did you mean 'map_tokens'?",
        ),  # fmt: skip
        (
            dict(intervene_layer=-1),
            ["--intervene-layer", "-1"],
            "{origin}: 'intervene_layer' must not be negative, got -1",
        ),  # fmt: skip
    ],
    ids=["empty-sentence-list", "unknown-setting", "bad-setting"],
)
def test_bad_input_is_the_clis_one_line(call, flags, message, tiny_model_dirs, tmp_path, nothing_written):  # fmt: skip
    folder = tiny_model_dirs["llama"]
    model, tokenizer = AutoModelForCausalLM.from_pretrained(folder), AutoTokenizer.from_pretrained(folder)  # fmt: skip
    with pytest.raises(attnreport.AttnReportError) as err:
        attnreport.analyze(model, tokenizer, **{"sentences": SENTENCES, **call}, progress=False)  # fmt: skip
    api_origin = {"empty-sentence-list": "the sentence list"}.get(_id(call), "analyze()")
    assert str(err.value) == message.format(origin=api_origin)
    nothing_written()
    scratch = Path(tempfile.mkdtemp(prefix="api-cli-"))
    try:
        files = {"empty": scratch / "empty.txt", "config": scratch / "attnreport.toml"}
        files["empty"].write_text("\n\n")
        files["config"].write_text("map_token = 8\n")
        args = [f.format(**{k: str(v) for k, v in files.items()}) for f in flags]
        code, stderr = cli("analyze", "--model", str(folder), *args, "--out", str(scratch / "out"))  # fmt: skip
        origin = {"empty-sentence-list": str(files["empty"]), "unknown-setting": str(files["config"])}.get(_id(call), "command line")  # fmt: skip
        assert code == 1 and stderr == f"error: {message.format(origin=origin)}"
    finally:
        shutil.rmtree(scratch)


def _id(call: dict) -> str:
    return {"sentences": "empty-sentence-list", "map_token": "unknown-setting"}.get(next(iter(call)), "bad-setting")  # fmt: skip


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (
            dict(dtype="bfloat16"),
            "analyze(): 'dtype': the model object's own dtype is used: convert the model before analyze (model.to(torch.bfloat16))",
        ),  # fmt: skip
        (dict(title="X"), "analyze(): 'title': a site option: pass it to render()"),
        (
            dict(out="x"),
            "analyze(): 'out': the results stay in memory: write them with study.save(path)",
        ),  # fmt: skip
    ],
)
def test_a_setting_with_a_home_elsewhere_says_where_it_goes(settings, message, nothing_written):
    with pytest.raises(attnreport.AttnReportError) as err:
        attnreport.analyze(tiny("gpt2"), tiny_tokenizer(), SENTENCES, **settings)
    assert str(err.value) == message
    nothing_written()


def test_what_is_not_a_model_or_a_list_of_sentences_is_refused(nothing_written):
    with pytest.raises(attnreport.AttnReportError, match="^the model must be a transformers model object"):  # fmt: skip
        attnreport.analyze("HuggingFaceTB/SmolLM2-135M", tiny_tokenizer(), SENTENCES)
    with pytest.raises(attnreport.AttnReportError, match="^the sentence list must be a list of strings, one sentence each; got str$"):  # fmt: skip
        attnreport.analyze(tiny("gpt2"), tiny_tokenizer(), "the cat sat")
    with pytest.raises(attnreport.AttnReportError, match="^the tokenizer must be the model's transformers tokenizer"):  # fmt: skip
        attnreport.analyze(tiny("gpt2"), None, SENTENCES)
    nothing_written()
