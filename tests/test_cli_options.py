"""Options are declared once and mean the same everywhere; explicit options beat the file;
help and ``init`` stay light (no torch, no transformers)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from attnreport.cli import main, settings_from
from attnreport.config import KEYS
from tests.patience import patience

ROOT = Path(__file__).resolve().parent.parent
MODEL_COMMANDS = ("verify", "build", "analyze")
# how a command runs, not what it computes: never a setting (nor in the manifest)
NOT_SETTINGS = {"config_file", "force", "help", "resume", "engine", "ray_address", "workers"}


def parsed(command: str, *args: str) -> click.Context:
    """The context click makes for ``attnreport COMMAND ARGS`` (parsed, not run)."""
    return main.commands[command].make_context(command, list(args))


def test_model_default_on_the_command_line_overrides_the_config_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("attnreport.toml").write_text('model = "./my-model"\ndtype = "bfloat16"\n')
    for command in ("build", "analyze"):
        out = ("--out", "o")
        from_file = settings_from(parsed(command, *out)).model
        assert Path(from_file).resolve() == (tmp_path / "my-model").resolve()
        explicit = settings_from(parsed(command, *out, "--model", "default", "--dtype", "float32"))
        assert explicit.model == "default" and explicit.dtype == "float32"


def test_options_left_at_their_default_leave_the_config_file_alone(tmp_path):
    config = tmp_path / "c.toml"
    config.write_text('device = "auto"\ntruncate = true\nimages = false\nbos = "never"\n')
    settings = settings_from(parsed("build", "--config", str(config)))
    assert (settings.device, settings.truncate, settings.images, settings.bos) == (
        "auto",
        True,
        False,
        "never",
    )
    again = settings_from(parsed("build", "--config", str(config), "--no-truncate", "--images"))
    assert again.truncate is False and again.images is True


@pytest.mark.parametrize("command", ["build", "analyze"])
def test_build_and_analyze_accept_dtype_device_and_bos(command, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no ./attnreport.toml
    args = ("--out", "o", "--dtype", "float16", "--device", "auto", "--bos", "always")
    settings = settings_from(parsed(command, *args))
    assert (settings.dtype, settings.device, settings.bos) == ("float16", "auto", "always")


def test_model_options_are_declared_once():
    """Every model command has the same model options, with the same help and defaults."""
    shared = ("model", "sentences", "dtype", "device", "device_map", "bos", "truncate")
    first = {p.name: p for p in main.commands["verify"].params}
    for command in MODEL_COMMANDS:
        params = {p.name: p for p in main.commands[command].params}
        for name in shared:
            assert params[name].help == first[name].help, (command, name)
            assert params[name].default == first[name].default, (command, name)
        assert set(params) - NOT_SETTINGS <= set(KEYS), f"{command}: an option that is no setting"


def test_analyze_writes_the_dtype_it_was_given(tmp_path, tiny_model_dirs):
    sentences = tmp_path / "s.txt"
    sentences.write_text("the cat sat on the mat\n")
    model = str(tiny_model_dirs["llama"])
    args = [
        "analyze",
        "--model",
        model,
        "--sentences",
        str(sentences),
        "--out",
        str(tmp_path / "r"),
    ]
    result = CliRunner().invoke(main, [*args, "--dtype", "bfloat16", "--device", "cpu"])
    assert result.exit_code == 0, result.output
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    assert (manifest["model"]["dtype"], manifest["model"]["device"]) == ("bfloat16", "cpu")
    assert manifest["settings"]["bos"] == "auto"


LIGHT = textwrap.dedent(
    """
    import sys
    from attnreport.cli import main
    try:
        main(sys.argv[1:], prog_name="attnreport")
    except SystemExit as done:
        assert not done.code, done.code
    heavy = sorted(m for m in ("torch", "transformers") if m in sys.modules)
    print("HEAVY", heavy)
    """
)


@pytest.mark.parametrize(
    "args",
    [["--help"], *([name, "--help"] for name in sorted(main.commands)), ["init", "--dir", "x"]],
    ids=lambda args: " ".join(args),
)
def test_help_and_init_never_import_torch_or_transformers(args, tmp_path):
    done = subprocess.run(
        [sys.executable, "-c", LIGHT, *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=patience(120),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "HEAVY []" in done.stdout, done.stdout[-500:]
