"""The GGUF cache: converted once, reused, never half-written, safe under concurrent builds."""

from __future__ import annotations

import subprocess
import sys

import pytest

from attnreport.models import loading

LOAD = "from attnreport.models.loading import load_model; m = load_model('default'); print(m.fingerprint)"


@pytest.mark.default_model
@pytest.mark.slow
def test_concurrent_first_loads_share_one_cache_entry(tmp_path):
    env = {"ATTNREPORT_CACHE": str(tmp_path), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", LOAD],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outputs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outputs
    assert outputs[0][0] == outputs[1][0] and outputs[0][0].startswith("sha256:")
    entries = list((tmp_path / "models").iterdir())
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
