"""Corpus runs of ``attnreport analyze``: per-sentence files, resume, refusals, .jsonl input."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from attnreport.cli import main
from attnreport.config import load_settings
from attnreport.errors import AttnReportError
from attnreport.results import CURRENT, SCHEMA_VERSION, load
from attnreport.sentences import read_sentences
from tests.patience import patience

ROOT = Path(__file__).resolve().parent.parent
WORDS = [
    "the",
    "a",
    "cat",
    "dog",
    "mouse",
    "chased",
    "sat",
    "on",
    "mat",
    "what",
    "does",
    "attention",
    "mechanism",
    "focus",
    "and",
]


@pytest.fixture
def one_thread():
    """Torch on one thread in this process, as each Ray worker runs; quicker on a busy
    machine (restored afterwards)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def write_corpus(path: Path, count: int, seed: int = 0) -> Path:
    """``count`` different sentences of 1 to 12 words of the tiny models' vocabulary."""
    rng = np.random.default_rng(seed)
    lines: list[str] = []
    while len(lines) < count:
        line = " ".join(rng.choice(WORDS, size=int(rng.integers(1, 13))))
        if line not in lines:
            lines.append(line)
    path.write_text("\n".join(lines) + "\n")
    return path


def tree_bytes(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def analyze(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["analyze", *args])
    return result.exit_code, result.output


def test_corpus_files_equal_the_per_sentence_code_and_a_one_pass_pooling(
    tmp_path, tiny_model_dirs, one_thread, monkeypatch
):
    """The run's files hold what the study's steps give in this process, and its set tables
    equal an independent one-pass pooling (``tests/pooling_reference.py``)."""
    from attnreport.analyses.layer_choice import strongest_first_token_layer
    from attnreport.results.interventions import interventions_to_json
    from attnreport.results.io import dump_json
    from attnreport.results.manifest import manifest_to_json
    from attnreport.results.types import sentence_to_json
    from attnreport.session import session_for
    from attnreport.study import analyze_sentence, intervention_results, manifest
    from tests.pooling_reference import pool_focus, pool_impact

    monkeypatch.chdir(tmp_path)  # the defaults, not the example's attnreport.toml
    corpus = write_corpus(tmp_path / "c.txt", 6)
    settings = load_settings(
        None, {"model": str(tiny_model_dirs["llama"]), "sentences": str(corpus)}
    )
    code, output = analyze(
        "--model", settings.model, "--sentences", str(corpus), "--out", str(tmp_path / "r")
    )
    assert code == 0, output
    files = tree_bytes(tmp_path / "r")
    session = session_for(settings)
    analyses = [analyze_sentence(session, s, settings) for s in session.sentences]
    for a in analyses:
        name = CURRENT.sentence(a.result.index)
        assert files[name] == CURRENT.encode(dump_json(sentence_to_json(a.result)))
        assert json.loads(files[f"partials/{a.result.index:03d}.json"])["index"] == a.result.index
    loaded = load(tmp_path / "r")  # the folder loads as one analyze wrote it
    by_sentence, pooled, pooled_sorted = pool_focus([a.focus for a in analyses])
    want = {"focus_by_sentence": by_sentence, "focus_pooled": pooled,
            "focus_sorted": pooled_sorted,
            "impact_pooled": pool_impact([a.head_impact for a in analyses])}  # fmt: skip
    for table, columns in want.items():
        got = getattr(loaded.set, table).arrays()
        for column in columns.keys() & got.keys():
            values = np.asarray(columns[column])
            if values.dtype.kind == "f":
                np.testing.assert_allclose(
                    got[column], values, rtol=1e-5, atol=1e-12
                )  # 6 digits kept
            else:
                assert got[column].tolist() == values.tolist(), (table, column)
    layer = strongest_first_token_layer(pooled)
    interventions = intervention_results(session, settings, layer)
    assert files[CURRENT.interventions] == CURRENT.encode(
        dump_json(interventions_to_json(interventions))
    )
    written = json.loads(files["manifest.json"])
    listed = written.pop("files")
    assert listed == {name: len(files[name]) for name in listed}
    assert written == json.loads(dump_json(manifest_to_json(manifest(session, settings))))
    run = json.loads(files["run.json"])
    assert run["sentences"]["count"] == 6 and run["model"]["fingerprint"].startswith("sha256:")


def test_resume_refuses_other_settings_model_or_sentences(tmp_path, tiny_model_dirs):
    corpus = write_corpus(tmp_path / "c.txt", 3)
    out = str(tmp_path / "r")
    base = ("--sentences", str(corpus), "--out", out, "--resume")
    code, output = analyze("--model", str(tiny_model_dirs["gpt2"]), *base)
    assert code == 0, output
    before = tree_bytes(Path(out))
    code, output = analyze("--model", str(tiny_model_dirs["gpt2"]), *base, "--intervene-layer", "1")
    assert code == 1
    assert output.strip().splitlines()[-1].startswith("error: cannot resume into")
    assert "its setting intervene_layer is null, this run's 1" in output
    code, output = analyze("--model", str(tiny_model_dirs["qwen2"]), *base)
    assert code == 1 and "it used the model gpt2" in output and "this run qwen2" in output
    write_corpus(corpus, 4)
    code, output = analyze("--model", str(tiny_model_dirs["gpt2"]), *base)
    assert code == 1 and "it has other sentences (3 sentences" in output
    assert tree_bytes(Path(out)) == before  # a refused resume writes nothing
    code, output = analyze("--model", str(tiny_model_dirs["gpt2"]), *base[:-1])
    assert code == 0, output  # without --resume: a fresh run replaces the old results
    assert sorted(p.name for p in (Path(out) / "sentences").iterdir())[-1] == "003.json.gz"
    run = Path(out) / "run.json"  # a run of an older results schema (plain .json sentences)
    run.write_text(
        run.read_text().replace(f'"attnreport.results/{SCHEMA_VERSION}"', '"attnreport.results/3"')
    )
    code, output = analyze("--model", str(tiny_model_dirs["gpt2"]), *base)
    assert code == 1 and "written by another results format (attnreport.results/3)" in output


def _analyze_process(model: Path, corpus: Path, out: Path, *extra: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    command = [sys.executable, "-m", "attnreport.cli", "analyze", "--model", str(model)]
    command += ["--sentences", str(corpus), "--out", str(out), *extra]
    return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def _finish(process: subprocess.Popen) -> None:
    output, _ = process.communicate(timeout=patience(240))
    assert process.returncode == 0, output.decode()


def kill_after(process: subprocess.Popen, folder: Path, finished: int) -> None:
    """SIGKILL ``process`` once ``folder`` holds ``finished`` sentences' partials."""
    deadline = time.monotonic() + patience(180)
    while time.monotonic() < deadline and process.poll() is None:
        if len(list(folder.glob("*.json"))) >= finished:
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=patience(30))
            return
        time.sleep(0.05)
    pytest.fail(f"the run ended or stalled before {finished} sentences: {process.returncode}")


@pytest.mark.slow
def test_resume_after_sigkill_gives_the_uninterrupted_results(tmp_path, tiny_model_dirs):
    corpus = write_corpus(tmp_path / "c.txt", 30)
    model = tiny_model_dirs["llama"]
    _finish(_analyze_process(model, corpus, tmp_path / "whole"))
    killed = _analyze_process(model, corpus, tmp_path / "resumed")
    kill_after(killed, tmp_path / "resumed" / "partials", 5)
    assert killed.returncode == -signal.SIGKILL
    assert not (tmp_path / "resumed" / CURRENT.set).exists()
    left = len(list((tmp_path / "resumed" / "partials").glob("*.json")))
    assert 5 <= left < 30
    resumed = _analyze_process(model, corpus, tmp_path / "resumed", "--resume")
    output, _ = resumed.communicate(timeout=patience(240))
    assert resumed.returncode == 0, output.decode()
    assert f"({left} from an earlier run)" in output.decode()
    assert tree_bytes(tmp_path / "resumed") == tree_bytes(tmp_path / "whole")


def test_jsonl_sentences(tmp_path):
    path = tmp_path / "c.jsonl"
    lines = [{"text": "the cat", "id": 1}, {"text": " a dog\nsat "}, {"text": "the cat"}]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n\n")
    assert read_sentences(path) == ["the cat", "a dog sat"]
    path.write_text('{"text": "ok"}\n{"text": 3}\n')
    with pytest.raises(AttnReportError, match=r'c.jsonl line 2 has no "text" string field$'):
        read_sentences(path)
    path.write_text('{"text": "ok"}\n\n{"text": "ok\n')
    with pytest.raises(AttnReportError, match=r"c.jsonl line 3 is not JSON: "):
        read_sentences(path)


def test_engine_ray_without_ray_says_how_to_install(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray raises ImportError
    monkeypatch.chdir(tmp_path)  # not the repository's attnreport.toml (two models)
    corpus = write_corpus(tmp_path / "c.txt", 2)
    code, output = analyze(
        "--sentences", str(corpus), "--out", str(tmp_path / "r"), "--engine", "ray"
    )
    assert code == 1
    assert output.strip() == (
        "error: --engine ray needs Ray, which is not installed: pip install 'attnreport[ray]'"
    )
    assert not (tmp_path / "r").exists()


def test_resume_redoes_unfinished_sentences_and_drops_stale_temporaries(
    tmp_path, tiny_model_dirs, one_thread
):
    corpus = write_corpus(tmp_path / "c.txt", 3)
    out = tmp_path / "r"
    args = ("--model", str(tiny_model_dirs["gpt2"]), "--sentences", str(corpus), "--out", str(out))
    assert analyze(*args)[0] == 0
    before = tree_bytes(out)
    (out / "partials" / "001.json").unlink()  # killed between its two files
    (out / "sentences" / ".002.json.gz.tmp-99999").write_bytes(b"half a fi")  # killed mid-write
    (out / CURRENT.set).unlink()
    with pytest.raises(AttnReportError, match="set.json.gz is missing"):
        load(out)  # an interrupted run's folder is refused until it is complete
    code, output = analyze(*args, "--resume")
    assert code == 0 and "(2 from an earlier run)" in output, output
    assert tree_bytes(out) == before
    assert len(load(out).sentences) == 3
