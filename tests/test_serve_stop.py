"""``serve --watch`` stops within a second or two of SIGTERM, even in the middle of an
analysis, and leaves the site and the results whole: the last good site is served from
disk as it was, every results file reads, and the stopped analysis resumes."""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from attnreport.cli import main
from attnreport.serve.stopping import STOP_S
from tests.test_serve_live import CONFIG, FIRST_BUILD_S, SAVE_S, free_port, write_sentences
from tests.tiny_models import save_tiny_model

pytestmark = pytest.mark.slow

# How long the process may take to end after SIGTERM: the deadline and 2 s more for a
# busy machine to schedule it (it took 5 s here, 25-60 s on a busy machine, before: most
# of it the interpreter's teardown freeing the model after "stopped" was printed).
STOPPED_S = STOP_S + 2


def _wait_line(lines: list[str], text: str, seconds: float, after: int = 0) -> None:
    """Wait for a line holding ``text`` among ``lines[after:]``."""
    deadline = time.monotonic() + seconds
    while not any(text in line for line in lines[after:]):
        assert time.monotonic() < deadline, f"no {text!r} within {seconds} s: {lines[-5:]}"
        time.sleep(0.05)


def _whole(results: Path) -> None:
    """Every file of a results folder reads: JSON, or gzip-compressed JSON."""
    for path in results.rglob("*"):
        if path.is_file() and path.name != ".attnreport-site":
            assert ".tmp-" not in path.name, path
            raw = path.read_bytes()
            json.loads(gzip.decompress(raw) if path.suffix == ".gz" else raw)


def test_sigterm_mid_analysis_stops_at_once_and_leaves_everything_whole(tmp_path):
    model = save_tiny_model("llama", tmp_path / "model")
    project = tmp_path / "project"
    project.mkdir()
    config = project / "attnreport.toml"
    config.write_text(CONFIG.format(model=model), encoding="utf-8")
    write_sentences(project, "the cat sat on the mat .", "the dog chased the cat")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["SOURCE_DATE_EPOCH"] = "1767225600"  # analysed on 2026-01-01, the date CONFIG sets
    command = [sys.executable, "-m", "attnreport.cli", "serve", "--watch", "--port", str(free_port())]  # fmt: skip
    process = subprocess.Popen(
        command, cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(process.stdout), daemon=True).start()
    try:
        _wait_line(lines, "first build:", FIRST_BUILD_S)
        first = (project / "site" / "index.html").read_bytes()
        # Both sentences change: the save analyses two sentences, with a progress line.
        seen = len(lines)
        write_sentences(project, "a bird sang in the tree .", "the fish swam away")
        _wait_line(lines, "Capturing sentences", SAVE_S, after=seen)
        sent = time.monotonic()
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=60)
        took = time.monotonic() - sent
    finally:
        if process.poll() is None:
            process.kill()
    assert code == 0 and took < STOPPED_S, (code, took, lines[-5:])
    assert any(line.startswith("stopped; the site and its results are kept") for line in lines)
    # The site is the last good one, whole; the results read, and the analysis resumes.
    assert (project / "site" / "index.html").read_bytes() == first
    assert (project / "site" / "results" / "manifest.json").is_file()
    results = project / "site-results"
    _whole(results)
    args = ["analyze", "--config", str(config), "--out", str(results), "--resume"]
    resumed = CliRunner().invoke(main, args)
    assert resumed.exit_code == 0, resumed.output
    manifest = json.loads((results / "manifest.json").read_text())
    assert [s["text"] for s in manifest["sentences"]] == ["a bird sang in the tree .", "the fish swam away"]  # fmt: skip
