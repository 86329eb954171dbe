"""The Ray engine on a local 2-CPU Ray cluster: same numbers as the local engine, a killed
worker costs a retry and not data, and a killed driver's run resumes."""

from __future__ import annotations

import signal
from pathlib import Path

import numpy as np
import pytest

from attnreport.config import load_settings
from attnreport.corpus import CorpusOptions, run_corpus
from attnreport.results import CURRENT, read_json
from attnreport.results.codec import decode_column
from attnreport.results.layout import is_results_file
from attnreport.results.map_parts import read_part_text
from tests.patience import patience
from tests.test_corpus_run import (  # noqa: F401  (one_thread is a fixture)
    _analyze_process,
    kill_after,
    one_thread,
    tree_bytes,
    write_corpus,
)
from tests.tiers import extended

ray = pytest.importorskip("ray")
psutil = pytest.importorskip("psutil")
# Every test that starts a Ray cluster lives here: one module runs on one xdist worker,
# so one local cluster at a time (tests/conftest.py checks that "ray" marks stay here).
pytestmark = [pytest.mark.ray, pytest.mark.slow, pytest.mark.usefixtures("one_thread")]


@pytest.fixture(scope="module")
def ray_cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield
    finally:
        ray.shutdown()


def assert_close(a, b, where: str = "") -> None:
    """Same JSON structure; floats equal to the 6 significant digits the files keep."""
    if isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for key in a:
            assert_close(a[key], b[key], f"{where}/{key}")
    elif isinstance(a, list):
        assert len(a) == len(b), where
        floats = [x for x in a if isinstance(x, float)]
        if floats and all(isinstance(x, (int, float)) or x is None for x in a + b):
            x = np.array([np.nan if v is None else v for v in a], dtype=float)
            y = np.array([np.nan if v is None else v for v in b], dtype=float)
            np.testing.assert_allclose(x, y, rtol=2e-5, atol=1e-7, equal_nan=True, err_msg=where)
        else:
            for i, (x, y) in enumerate(zip(a, b, strict=True)):
                assert_close(x, y, f"{where}/{i}")
    elif isinstance(a, float):
        assert b == pytest.approx(a, rel=2e-5, abs=1e-7), where
    else:
        assert a == b, where


def assert_same_results(a: Path, b: Path) -> None:
    """The same files holding the same numbers (their JSON: compressed bytes may differ
    where a worker's zlib does)."""
    files_a, files_b = tree_bytes(a), tree_bytes(b)
    assert files_a.keys() == files_b.keys()
    for name in files_a:
        if name.endswith(".js"):  # a map part: its columns
            parts = [read_part_text(files[name], name)[1] for files in (files_a, files_b)]
            assert_close(parts[0], parts[1], name)
        elif is_results_file(name) and not name.startswith("partials/"):
            assert_close(read_json(a / name), read_json(b / name), name)


def corpus_run(tmp_path: Path, model: Path, corpus: Path, name: str, engine: str, progress=None):
    config = load_settings(
        None, {"model": str(model), "sentences": str(corpus), "out": str(tmp_path / name)}
    )
    options = CorpusOptions(engine=engine, workers=2 if engine == "ray" else None)
    if progress is None:
        return run_corpus(config, options)
    return run_corpus(config, options, progress=progress)


def test_ray_gives_the_local_numbers(tmp_path, tiny_model_dirs, ray_cluster, monkeypatch):
    """... and reports the layers done in the sentences in flight while it waits: sums over
    the two workers' current sentences (3 layers each), some of them part-way, which the
    actors can only say while ``analyze`` runs (their progress concurrency group)."""
    from attnreport.corpus.engines import cluster
    from attnreport.corpus.run import LAYERS

    monkeypatch.setattr(cluster, "POLL_S", 0.005)
    corpus = write_corpus(tmp_path / "c.txt", 200)
    model = tiny_model_dirs["llama"]
    corpus_run(tmp_path, model, corpus, "local", "local")
    calls: list[tuple[str, int, int]] = []
    summary = corpus_run(tmp_path, model, corpus, "ray", "ray", lambda *c: calls.append(c))
    assert summary.sentences == 200 and summary.resumed == 0
    assert_same_results(tmp_path / "local", tmp_path / "ray")
    layers = [(done, total) for stage, done, total in calls if stage == LAYERS]
    assert layers and all(0 <= d <= t and t in (3, 6) for d, t in layers), layers[:20]
    assert any(d % 3 for d, _ in layers), "no answer came while a sentence was part-way"


def sentence_workers() -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter(["cmdline"]):
        if any("SentenceWorker" in part for part in process.info["cmdline"] or []):
            found.append(process)
    return found


def test_a_killed_worker_costs_a_retry_not_data(tmp_path, tiny_model_dirs, ray_cluster):
    corpus = write_corpus(tmp_path / "c.txt", 40, seed=1)
    killed: list[int] = []

    def kill_one_worker(stage: str, done: int, _total: int) -> None:
        if stage == "capture" and done == 10 and not killed:
            victim = sentence_workers()[0]
            killed.append(victim.pid)
            victim.kill()

    corpus_run(tmp_path, tiny_model_dirs["gpt2"], corpus, "r", "ray", kill_one_worker)
    assert killed and not psutil.pid_exists(killed[0])
    out = tmp_path / "r"
    assert sorted(p.relative_to(out).as_posix() for p in (out / "sentences").glob("*.json.gz")) == [
        CURRENT.sentence(i) for i in range(40)
    ]
    by_sentence = read_json(out / CURRENT.set)["tables"]["focus_by_sentence"]
    column = decode_column(by_sentence["columns"]["sentence"])  # results columns are encoded
    sentences, counts = np.unique(column, return_counts=True)
    assert sentences.tolist() == list(range(40)) and len(set(counts.tolist())) == 1
    corpus_run(tmp_path, tiny_model_dirs["gpt2"], corpus, "local", "local")
    assert_same_results(tmp_path / "local", out)


@pytest.mark.slow
@extended(
    "tests/test_corpus_run.py::test_resume_after_sigkill_gives_the_uninterrupted_results",
    "tests/test_corpus_ray.py::test_ray_gives_the_local_numbers",
)
def test_resume_after_sigkill_of_the_ray_driver(tmp_path, tiny_model_dirs, ray_cluster):
    """The killed driver joins this module's cluster (``--ray-address``: its actors die
    with it, the cluster lives on); the resumed one starts a local cluster of its own."""
    corpus = write_corpus(tmp_path / "c.txt", 40, seed=2)
    model = tiny_model_dirs["llama"]
    ray_args = ("--engine", "ray", "--workers", "2")
    address = ("--ray-address", ray.get_runtime_context().gcs_address)
    driver = _analyze_process(model, corpus, tmp_path / "resumed", *ray_args, *address)
    kill_after(driver, tmp_path / "resumed" / "partials", 5)
    assert driver.returncode == -signal.SIGKILL
    resumed = _analyze_process(model, corpus, tmp_path / "resumed", "--resume", *ray_args)
    output, _ = resumed.communicate(timeout=patience(240))
    assert resumed.returncode == 0, output.decode()
    assert "from an earlier run" in output.decode()
    corpus_run(tmp_path, model, corpus, "whole", "local")  # in this process, as above
    assert_same_results(tmp_path / "whole", tmp_path / "resumed")
