"""The GGUF cache: converted once, reused, never half-written, safe under concurrent builds."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from attnreport.models import loading
from tests.patience import patience
from tests.tiny_gguf import write_tiny_gguf

# Each process loads the GGUF once the test opens the gate (a file), so that both check
# the cache, find no entry and convert at the same time; the log says each conversion.
LOAD = """
import logging, sys, time
from pathlib import Path
from attnreport.models.loading import load_model
logging.basicConfig(level=logging.INFO, stream=sys.stderr)
gguf, gate = sys.argv[1:3]
Path(gate + "." + sys.argv[3]).touch()
while not Path(gate).exists():
    time.sleep(0.002)
print(load_model(gguf).fingerprint)
"""


@pytest.mark.slow
def test_concurrent_first_loads_share_one_cache_entry(tmp_path):
    """Two processes that both find the cache empty both dequantise (a tiny GGUF written
    here: the default model's takes 16-30 s each); one entry stays, whole, and the loser
    of the rename race uses it."""
    gguf, cache, gate = write_tiny_gguf(tmp_path / "tiny.gguf"), tmp_path / "cache", tmp_path / "go"
    env = {"ATTNREPORT_CACHE": str(cache), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", LOAD, str(gguf), str(gate), str(i)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(2)
    ]
    deadline = time.monotonic() + patience(300)
    while not all(Path(f"{gate}.{i}").exists() for i in range(2)):
        assert time.monotonic() < deadline and all(p.poll() is None for p in procs)
        time.sleep(0.01)
    gate.touch()
    outputs = [p.communicate(timeout=patience(300)) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outputs
    assert outputs[0][0] == outputs[1][0] and outputs[0][0].startswith("sha256:")
    assert all("dequantising tiny.gguf" in err for _, err in outputs), "no race: one converted"
    entries = list((cache / "models").iterdir())
    assert len(entries) == 1 and not entries[0].name.startswith(".tmp-"), entries
    assert (entries[0] / "model.safetensors").is_file()
    assert (entries[0] / "attnreport-source.json").is_file()


def test_cache_dir_follows_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("ATTNREPORT_CACHE", str(tmp_path / "a"))
    assert loading.cache_dir() == tmp_path / "a"
    monkeypatch.delenv("ATTNREPORT_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert loading.cache_dir() == tmp_path / "x" / "attnreport"


def test_resolve_source_kinds(tmp_path):
    assert loading.resolve_source("gpt2").kind == "hub"
    assert loading.resolve_source("bigscience/bloom-560m").kind == "hub"
    assert loading.resolve_source(str(tmp_path)).kind == "directory"
    with pytest.raises(loading.AttnReportError, match="does not exist"):
        loading.resolve_source("models/missing.gguf")
    text = tmp_path / "notes.txt"
    text.write_text("x")
    with pytest.raises(loading.AttnReportError, match="not a .gguf"):
        loading.resolve_source(str(text))
