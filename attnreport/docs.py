"""Generate the README's CLI reference from the commands' own ``--help`` text.

``python -m attnreport.docs`` rewrites the section between the markers in README.md;
a test fails when the README has drifted from the commands.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from attnreport.cli import main

START, END = "<!-- cli-reference:start -->", "<!-- cli-reference:end -->"


def cli_reference() -> str:
    """Markdown: one ``--help`` block per command, in alphabetical order."""
    parts = []
    for name in sorted(main.commands):
        command = main.commands[name]
        with click.Context(command, info_name=f"attnreport {name}", terminal_width=88) as ctx:
            text = command.get_help(ctx)
        parts.append(f"### `attnreport {name}`\n\n```\n{text}\n```\n")
    return "\n".join(parts)


def with_reference(readme: str) -> str:
    head, _, rest = readme.partition(START)
    _, _, tail = rest.partition(END)
    return f"{head}{START}\n{cli_reference()}{END}{tail}"


if __name__ == "__main__":
    path = Path(sys.argv[1] if len(sys.argv) > 1 else "README.md")
    path.write_text(with_reference(path.read_text(encoding="utf-8")), encoding="utf-8")
