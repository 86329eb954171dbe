"""Every command is documented, and the README's reference is the commands' own help."""

from __future__ import annotations

from pathlib import Path

import pytest

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


def test_readme_api_reference_documents_every_public_name():
    import attnreport
    from attnreport.docs import api_reference

    reference = api_reference()
    for name in attnreport.__all__:
        assert f"### `attnreport.{name}" in reference, name
    for method in ("save", "tables", "table", "figures", "figure"):
        assert f"### `Study.{method}(" in reference, method


def readme_python_block(heading: str) -> str:
    """The first ``python`` block under README's ``heading``."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index(f"\n{heading}\n") :]
    start = section.index("```python\n") + len("```python\n")
    return section[start : section.index("\n```", start)]


@pytest.mark.slow
@pytest.mark.default_model
def test_readme_python_example_runs(tmp_path, monkeypatch):
    """The README's Python API example, run as written but for where the model comes from:
    SmolLM2-135M-Instruct dequantised from the embedded GGUF (the hub's architecture and
    tokenizer; no network here). It shows one head's map and writes the site."""
    from attnreport.models.loading import convert_gguf, default_gguf_path, file_sha256

    gguf = default_gguf_path()
    folder = convert_gguf(gguf, file_sha256(gguf))
    block = readme_python_block("## Python API")
    code = block.replace('"HuggingFaceTB/SmolLM2-135M-Instruct"', repr(str(folder)))
    assert code.count(repr(str(folder))) == 2
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    *statements, figure, render = code.splitlines()
    exec("\n".join(statements), namespace)
    chart = eval(figure, namespace)
    params = {p["name"]: p.get("value") for p in chart.to_dict()["params"]}
    assert (params["layer"], params["head"]) == (3, 2)
    exec(render, namespace)
    assert "The cat sat on the mat because it was warm." in (tmp_path / "site" / "index.html").read_text(encoding="utf-8")  # fmt: skip
