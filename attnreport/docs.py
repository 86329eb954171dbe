"""Generate the README's CLI reference, its Python API reference and its table of
supported families, and the results schema's lists of tables.

``python -m attnreport.docs`` rewrites the sections between the markers in README.md
(from the commands' own ``--help`` text, the public API's signatures and docstrings,
and the family registry) and each file's ``"tables"`` list in docs/results-schema.md
(from the typed results: a new table is listed by its field); a test fails when either
has drifted.
"""

from __future__ import annotations

import inspect
import json
import sys
from collections.abc import Callable
from pathlib import Path

import click

from attnreport.cli import main
from attnreport.models.families import FAMILIES, zoo
from attnreport.results import types

START, END = "<!-- cli-reference:start -->", "<!-- cli-reference:end -->"
API_START, API_END = "<!-- api-reference:start -->", "<!-- api-reference:end -->"
FAMILY_START, FAMILY_END = "<!-- families:start -->", "<!-- families:end -->"
CHECKED = (
    "the `verify` checks (three, and a fourth on a post-attention norm); Q/K scaled to ~0 "
    "gives uniform attention over the allowed keys; V scaled leaves the layer and changes the next; the model is restored after a "
    "failing pass; `build --no-images` renders every page"
)


def cli_reference() -> str:
    """Markdown: one ``--help`` block per command, in alphabetical order."""
    parts = []
    for name in sorted(main.commands):
        command = main.commands[name]
        with click.Context(command, info_name=f"attnreport {name}", terminal_width=88) as ctx:
            text = command.get_help(ctx)
        parts.append(f"### `attnreport {name}`\n\n```\n{text}\n```\n")
    return "\n".join(parts)


def api_reference() -> str:
    """Markdown: each public function of ``attnreport.__all__`` and each public method of
    ``Study``, with its signature and its docstring, in ``__all__``'s order."""
    import attnreport
    from attnreport.api.study import Study

    parts = []
    for name in attnreport.__all__:
        value = getattr(attnreport, name)
        if inspect.isfunction(value):
            parts.append(_documented(f"attnreport.{name}", value))
        elif value is Study:
            parts.append(f"### `attnreport.Study`\n\n{inspect.getdoc(Study)}\n")
            methods = [m for m, f in vars(Study).items() if inspect.isfunction(f) and not m.startswith("_")]  # fmt: skip
            parts += [_documented(f"Study.{m}", getattr(Study, m)) for m in methods]
        else:
            parts.append(f"### `attnreport.{name}`\n\n{inspect.getdoc(value)}\n")
    return "\n".join(parts)


def _documented(name: str, fn: Callable) -> str:
    """``### `name(signature) -> returns```, then the docstring."""
    signature = inspect.signature(fn)
    params, star = [], False
    for p in signature.parameters.values():
        if p.name == "self":
            continue
        if p.kind is p.KEYWORD_ONLY and not star:
            params.append("*")
        star = star or p.kind in (p.KEYWORD_ONLY, p.VAR_POSITIONAL)
        prefix = {p.VAR_POSITIONAL: "*", p.VAR_KEYWORD: "**"}.get(p.kind, "")
        text = prefix + p.name + (f": {p.annotation}" if p.annotation is not p.empty else "")
        if p.default is not p.empty:
            text += f" = {p.default!r}"
        params.append(text)
    returns = f" -> {signature.return_annotation}" if signature.return_annotation is not signature.empty else ""  # fmt: skip
    return f"### `{name}({', '.join(params)}){returns}`\n\n{inspect.getdoc(fn)}\n"


def families_table() -> str:
    """Markdown table of the family registry: what each family was verified with."""
    rows = [
        "| Family | `model_type` | Positions | Route | Verified on a tiny model with |",
        "|---|---|---|---|---|",
    ]
    for family in FAMILIES:
        features = ", ".join(family.verified) or "-"
        types = ", ".join(f"`{t}`" for t in family.model_types)
        rows.append(
            f"| {family.name} | {types} | {family.positional} | {family.route} | {features} |"
        )
    note = (
        f"Every family is checked for: {CHECKED}; except RecurrentGemma (a hybrid), JetMoE, "
        "DiffLlama and DeepSeek V2, verified in the zoo below. The last three are also checked "
        "for the Q and V interventions, the build, and the model's own logits when adapted."
    )
    return "\n".join(rows) + f"\n\n{note}\n\n{zoo_summary()}"


def zoo_summary() -> str:
    """Markdown: the zoo's counts and outcomes (``attnreport.models.families.zoo``)."""
    built = len(zoo.VERIFIED) + len(zoo.REFUSED)
    share = round(100 * len(zoo.VERIFIED) / built)
    verified = ", ".join(f"`{t}`" for t in zoo.VERIFIED)
    by_reason: dict[str, list[str]] = {}
    for model_type, reason in zoo.REFUSED.items():
        if reason.endswith("Error"):
            reason = f"code that fails under capture ({reason})"
        by_reason.setdefault(reason, []).append(f"`{model_type}`")
    refused = "".join(f"- {reason}: {', '.join(types)}\n" for reason, types in by_reason.items())
    return (
        "Any other architecture is checked when it loads: discovery, then the `verify` checks "
        "(three, and a fourth on a post-attention norm) on an 8-token probe, layer by layer; a "
        "model that fails is refused in one line naming the check and the layer. The test suite builds a tiny random model of every "
        f"decoder-only text `model_type` of transformers {zoo.TRANSFORMERS} "
        f"({built + len(zoo.NOT_TINY)}); {built} build from a small config. Of those, "
        f"{len(zoo.VERIFIED)} verify ({share}%): {verified}.\n\n"
        f"{len(zoo.HYBRID)} of these are hybrids whose other blocks are not attention "
        f"({', '.join(f'`{t}`' for t in zoo.HYBRID)}): their attention layers are analysed "
        "and numbered by block; the other blocks (Mamba, linear attention, convolution) have "
        'no rows, are shaded and labelled "not attention" on the charts drawn against layer '
        "and named in the captions and the model card; interventions run on attention "
        "layers only.\n\n"
        f"{_attention_share()}\n\n"
        f"{len(zoo.REFUSED)} are refused in one line, by what they lack:\n\n{refused}"
    )


def _attention_share() -> str:
    """Markdown: the verified share without the attention-free types (nothing to capture)."""
    free = zoo.ATTENTION_FREE
    models = len(zoo.VERIFIED) + len(zoo.REFUSED) - len(free)
    return (
        f"{len(free)} of the refused types have no softmax attention at all "
        f"({', '.join(f'`{t}`' for t in free)}: state-space, WKV and xLSTM recurrences); "
        f"of the {models} attention models that build tiny, {len(zoo.VERIFIED)} verify "
        f"({100 * len(zoo.VERIFIED) / models:.1f}%)."
    )


def _between(text: str, start: str, end: str, body: str) -> str:
    head, _, rest = text.partition(start)
    _, _, tail = rest.partition(end)
    return f"{head}{start}\n{body}{end}{tail}"


def with_reference(readme: str) -> str:
    readme = _between(readme, FAMILY_START, FAMILY_END, families_table())
    readme = _between(readme, API_START, API_END, api_reference())
    return _between(readme, START, END, cli_reference())


def schema_tables(holder: type, width: int) -> list[str]:
    """The lines of a results file's ``"tables"`` list: each table field of ``holder``
    with its columns, the names padded to ``width``."""
    kinds = types.table_kinds(holder).items()
    return [
        f"    {json.dumps(name) + ':':<{width}} {', '.join(k.columns_of())}" for name, k in kinds
    ]


def with_schema_tables(doc: str) -> str:
    """docs/results-schema.md with the ``"tables"`` list of each results file's section
    (``## `sentences/NNN.json.gz```, ``## `set.json.gz```) generated from its typed value."""
    lines = doc.split("\n")
    files = (("sentences/NNN.json.gz", types.SentenceTables, 15),
             ("set.json.gz", types.SetResults, 20))  # fmt: skip
    for file, holder, width in files:
        section = lines.index(f"## `{file}`")
        start = lines.index('  "tables": {', section) + 1
        end = lines.index("  },", start)
        lines[start:end] = schema_tables(holder, width)
    return "\n".join(lines)


if __name__ == "__main__":
    path = Path(sys.argv[1] if len(sys.argv) > 1 else "README.md")
    path.write_text(with_reference(path.read_text(encoding="utf-8")), encoding="utf-8")
    schema = path.parent / "docs" / "results-schema.md"
    schema.write_text(with_schema_tables(schema.read_text(encoding="utf-8")), encoding="utf-8")
