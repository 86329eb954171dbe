"""A render-only install (``attnreport[render]``: no torch, transformers, accelerate, gguf
or safetensors) renders a site, and a command that runs a model says in one line which
extra it needs.

These run in a fresh interpreter in which the ``analysis`` extra's modules cannot be
imported (``sys.modules[name] = None``: ``import torch`` raises ImportError and
``importlib.util.find_spec`` finds nothing), which is what a venv without them sees, in
seconds. ``tests/test_install.py`` (slow) does it for real: a fresh venv with only the
``render`` extra installed, rendering through the render workflow's own commands.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from attnreport.extras import ANALYSIS
from attnreport.output import write_site
from attnreport.results import CURRENT, dump
from tests.fixtures.fake_results import fake_study, typed
from tests.patience import patience

WITHOUT_ANALYSIS = textwrap.dedent(
    f"""
    import sys
    for name in {ANALYSIS!r}:
        sys.modules[name] = None
    try:
        import torch
    except ImportError:
        pass
    else:
        raise AssertionError("torch is still importable")
    from attnreport.cli import main
    main(sys.argv[1:])
    """
)


def run_without_analysis(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parent.parent)
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_ANALYSIS, *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=patience(300),
    )


def test_render_works_without_the_analysis_extra(tmp_path):
    results = write_site(dump(typed(fake_study(2, n_layers=2, n_heads=2))), tmp_path / "results")
    done = run_without_analysis(tmp_path, "render", str(results), "--out", "site", "--no-images")
    assert done.returncode == 0, done.stderr[-3000:]
    for name in ("index.html", "assets/runtime.js", "results/" + CURRENT.set):
        assert (tmp_path / "site" / name).is_file(), name
    assert "rendered 3 page(s)" in done.stdout


def test_commands_that_run_a_model_name_the_extra(tmp_path):
    for command in ("build", "analyze", "verify"):
        args = [command, "--out", "out"] if command != "verify" else [command]
        done = run_without_analysis(tmp_path, *args)
        assert done.returncode == 1, (command, done.stderr)
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1, (command, done.stderr)
        assert lines[0].startswith("error: running a model needs the analysis extra (torch,")
        assert "pip install 'attnreport[analysis]'" in lines[0]
        assert not (tmp_path / "out").exists()
