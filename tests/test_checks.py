"""Every input error that needs no model is one line before the model loads: the command
runs in a child process where importing torch or transformers fails, and must still
answer with its one-line error, exit 1 and a small CPU time (the work of a check, not of
a model load; CPU time, not wall time, so a busy machine does not fail it). Models that
are no causal decoder are refused in a reader's terms, before and at load."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from attnreport.checks import architecture_problem, check_model
from attnreport.errors import AttnReportError
from tests.patience import patience

# Run the command line with an import hook that lets ``find_spec`` see torch and
# transformers (the analysis extra is installed) but fails their import.
BLOCKED = """
import atexit, importlib.abc, importlib.machinery, resource, sys

class Refuse(importlib.abc.Loader):
    def create_module(self, spec):
        return None

    def exec_module(self, module):
        raise ImportError(f"BLOCKED: {module.__name__} imported before the input was checked")

class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] not in ("torch", "transformers"):
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is not None:
            spec.loader = Refuse()
        return spec

def cpu():  # the last line of stderr, after any traceback
    usage = resource.getrusage(resource.RUSAGE_SELF)
    print(f"CPU {usage.ru_utime + usage.ru_stime:.3f}", file=sys.stderr)

atexit.register(cpu)
sys.meta_path.insert(0, Block())
from attnreport.cli import main
main(sys.argv[1:], prog_name="attnreport")
"""
CPU_LIMIT_S = 2.0  # the 2 s, as CPU time: interpreter, click and the checks


def run_blocked(args: list[str], cwd: Path) -> tuple[int, list[str], float]:
    """Exit code, stderr lines (less the CPU line) and CPU seconds of ``attnreport ARGS``."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, "-c", BLOCKED, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=patience(300),
    )
    lines = done.stderr.strip().splitlines()
    cpu = float(lines[-1].removeprefix("CPU "))
    return done.returncode, lines[:-1], cpu


def _folder(root: Path, name: str, config: dict | None, *files: str) -> str:
    folder = root / name
    folder.mkdir()
    if config is not None:
        (folder / "config.json").write_text(json.dumps(config))
    for file in files:
        (folder / file).write_bytes(b"x")
    return f"./{name}"


BERT = {"architectures": ["BertForMaskedLM"], "model_type": "bert", "is_decoder": False}
T5 = {"architectures": ["T5ForConditionalGeneration"], "model_type": "t5", "is_encoder_decoder": True}  # fmt: skip
LLAMA = {"architectures": ["LlamaForCausalLM"], "model_type": "llama"}


def _cases(root: Path) -> list[tuple[list[str], str]]:
    """(arguments, the start of the one-line error) for every input error that needs no model."""
    (root / "two.txt").write_text("the cat sat\nthe dog ran\n")
    (root / "latin1.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    (root / "a-file").write_text("not a folder")
    (root / "model.gguf").write_bytes(b"NOPE" + b"\0" * 60)
    (root / "bad.toml").write_text('modle = "default"\n')
    (root / "scaling.toml").write_text('sentences = "two.txt"\nscaling_sentence = 5\n')
    (root / "mean.toml").write_text('sentences = "two.txt"\nmean_sentences = [0, 5]\n')
    foreign = root / "theirs"
    foreign.mkdir()
    (foreign / "notes.md").write_text("mine")
    bert = _folder(root, "bert", BERT, "model.safetensors", "tokenizer.json")
    t5 = _folder(root, "t5", T5, "model.safetensors", "tokenizer.json")
    no_weights = _folder(root, "no-weights", LLAMA, "tokenizer.json")
    no_tokenizer = _folder(root, "no-tokenizer", LLAMA, "model.safetensors")
    no_config = _folder(root, "no-config", None, "model.safetensors")
    two = ["--sentences", "two.txt"]
    cases = [
        (
            ["analyze", "--sentences", "missing.txt", "--out", "o"],
            "sentence file missing.txt does not exist",
        ),  # fmt: skip
        (["build", "--sentences", "theirs"], "sentence file theirs is a directory"),
        (
            ["analyze", "--sentences", "latin1.txt", "--out", "o"],
            "latin1.txt is not UTF-8 (byte 3)",
        ),  # fmt: skip
        (["build", *two, "--pages", "7-9"], "--pages: sentence 7 does not exist (the corpus has 2"),
        (
            ["analyze", "--config", "bad.toml", "--out", "o"],
            "bad.toml: unknown key 'modle'; did you mean 'model'?",
        ),  # fmt: skip
        (["build", "--config", "scaling.toml"], "scaling sentence 5 does not exist (the set has 2"),
        (
            ["analyze", "--config", "mean.toml", "--out", "o"],
            "mean-grid sentence 5 does not exist (the set has 2, 0-1)",
        ),  # fmt: skip
        (["analyze", "--model", "./nowhere", "--out", "o"], "model path ./nowhere does not exist"),
        (
            ["verify", "--model", bert],
            f"{bert} is BertForMaskedLM, an encoder: its tokens attend to the whole text",
        ),  # fmt: skip
        (["build", "--model", t5], f"{t5} is T5ForConditionalGeneration, an encoder-decoder"),
        (
            ["build", "--model", no_weights],
            f"model folder {no_weights} has a config.json but no weights",
        ),  # fmt: skip
        (["build", "--model", no_tokenizer], f"model folder {no_tokenizer} has no tokenizer"),
        (
            ["analyze", "--model", no_config, "--out", "o"],
            f"model folder {no_config} has no config.json",
        ),  # fmt: skip
        (["verify", "--model", "./model.gguf"], "model.gguf is not a GGUF file (bad magic bytes)"),
        (["verify", "--model", "./two.txt"], "two.txt is a file but not a .gguf model"),
        (["build", *two, "--out", "a-file"], "output path"),
        (
            ["analyze", *two, "--out", "theirs"],
            "output folder theirs is not empty and was not written by attnreport",
        ),  # fmt: skip
    ]
    if not any(
        os.path.exists(p) for p in ("/dev/nvidiactl", "/dev/nvidia0", "/dev/kfd", "/dev/dxg")
    ):
        cases.append((["analyze", *two, "--device", "cuda", "--out", "o"], "--device cuda: this machine has no GPU"))  # fmt: skip
    return cases


def test_every_input_error_comes_before_torch_in_one_line(tmp_path):
    slow = []
    for args, message in _cases(tmp_path):
        code, lines, cpu = run_blocked(args, tmp_path)
        assert code == 1 and len(lines) == 1, (args, lines)
        assert lines[0].startswith("error: " + message), (args, lines[0])
        if cpu >= CPU_LIMIT_S:
            slow.append((args, cpu))
    assert not slow, f"checks over {CPU_LIMIT_S} s of CPU: {slow}"
    assert not (tmp_path / "o").exists() and not (tmp_path / "site").exists()


def test_a_good_input_reaches_the_model_load(tmp_path):
    """The guard is real: the same command with good input gets as far as importing torch."""
    (tmp_path / "two.txt").write_text("the cat sat\nthe dog ran\n")
    code, lines, _cpu = run_blocked(["analyze", "--sentences", "two.txt", "--out", "o"], tmp_path)
    assert code != 0 and "imported before the input was checked" in "\n".join(lines), lines


def test_verify_is_not_stopped_by_the_projects_grid_choices(tmp_path):
    """``verify`` runs no grid: a project whose mean grid names sentence 5 still verifies
    a two-sentence file (it reaches the model load), where ``analyze`` is refused."""
    (tmp_path / "two.txt").write_text("the cat sat\nthe dog ran\n")
    (tmp_path / "attnreport.toml").write_text("mean_sentences = [0, 5]\n")
    code, lines, _cpu = run_blocked(["verify", "--sentences", "two.txt"], tmp_path)
    assert code != 0 and "imported before the input was checked" in "\n".join(lines), lines


def test_pages_past_the_end_say_what_they_mean(tmp_path):
    (tmp_path / "two.txt").write_text("the cat sat\nthe dog ran\n")
    (tmp_path / "no-weights").mkdir()
    (tmp_path / "no-weights" / "config.json").write_text(json.dumps(LLAMA))
    args = ["build", "--sentences", "two.txt", "--pages", "9", "--model", "./no-weights"]
    _code, lines, _cpu = run_blocked(args, tmp_path)
    assert lines[0] == "warning: --pages 9: the set has 2 sentence(s), so every one of them gets a page"  # fmt: skip


@pytest.mark.parametrize(
    ("config", "kind"),
    [
        (BERT, "an encoder"),
        ({"model_type": "bert", "architectures": ["BertForPreTraining"]}, "an encoder"),
        ({"model_type": "bert", "architectures": ["BertModel"], "is_decoder": False}, "an encoder"),
        (T5, "an encoder-decoder"),
        ({"model_type": "encoder-decoder", "encoder": {}, "decoder": {}}, "an encoder-decoder"),
        (LLAMA, None),
        ({"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "is_decoder": False}, None),
        ({"model_type": "bert", "architectures": ["BertLMHeadModel"], "is_decoder": True}, None),
        ({"model_type": "mystery"}, None),
    ],
)
def test_architectures_are_named_in_a_readers_terms(config, kind):
    problem = architecture_problem(config, "m")
    if kind is None:
        assert problem is None
    else:
        assert problem is not None and f", {kind}" in problem and "attnreport reads causal decoders" in problem  # fmt: skip


def test_a_hub_id_in_the_local_cache_is_checked_before_loading(tmp_path, monkeypatch):
    repo = tmp_path / "models--someone--bert-ish"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("abc123")
    (repo / "snapshots" / "abc123").mkdir(parents=True)
    (repo / "snapshots" / "abc123" / "config.json").write_text(json.dumps(BERT))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    with pytest.raises(AttnReportError, match="someone/bert-ish is BertForMaskedLM, an encoder"):
        check_model("someone/bert-ish")
    check_model("someone/not-cached")  # unknown here: the loader decides


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["encoder", "encoder-decoder"])
def test_the_loader_refuses_real_encoders_in_a_readers_terms(tmp_path, kind):
    """A real (tiny, random) BERT or T5 saved by transformers, past the pre-load check:
    the loader reads its config and refuses it before loading the weights."""
    from transformers import BertConfig, BertForMaskedLM, T5Config, T5ForConditionalGeneration

    from attnreport.models.loading import load_model

    if kind == "encoder":
        config = BertConfig(vocab_size=64, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32)  # fmt: skip
        model = BertForMaskedLM(config)
    else:
        config = T5Config(vocab_size=64, d_model=16, d_kv=8, d_ff=32, num_layers=1, num_heads=2)
        model = T5ForConditionalGeneration(config)
    model.save_pretrained(tmp_path / "m")
    saved = json.loads((tmp_path / "m" / "config.json").read_text())
    saved.pop("architectures", None), saved.pop("is_decoder", None)  # only the loader can tell
    (tmp_path / "m" / "config.json").write_text(json.dumps(saved))
    with pytest.raises(AttnReportError, match=f", an {kind}"):
        load_model(str(tmp_path / "m"))
