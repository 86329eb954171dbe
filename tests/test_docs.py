"""Every command is documented, and the README's reference is the commands' own help."""

from __future__ import annotations

from pathlib import Path

from attnreport.cli import main
from attnreport.docs import cli_reference, with_reference, with_schema_tables

ROOT = Path(__file__).resolve().parent.parent


def test_every_command_has_help_text():
    for name, command in main.commands.items():
        assert command.help and len(command.help.strip()) > 20, name
        for param in command.params:
            if param.param_type_name == "option" and param.name != "help":
                assert param.help, f"{name} --{param.name} has no help"


def test_readme_cli_reference_is_current():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert readme == with_reference(readme), "run: python -m attnreport.docs"
    for name in main.commands:
        assert f"### `attnreport {name}`" in cli_reference()


def test_results_schema_lists_the_typed_tables():
    doc = (ROOT / "docs" / "results-schema.md").read_text(encoding="utf-8")
    assert doc == with_schema_tables(doc), "run: python -m attnreport.docs"


def test_readme_commands_are_make_targets():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for target in ("site", "test"):
        assert f"\nmake {target}\n" in readme
        assert f"\n{target}:" in makefile
    assert "make test" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
