"""What each part of attnreport needs installed: the base install renders; the analysis
(capturing a model's attention) needs the ``analysis`` extra.

A command that runs a model calls ``require_analysis`` first, so a render-only install
(``pip install attnreport[render]``) answers ``build`` with one line naming the extra
instead of a traceback from ``import torch``.
"""

from __future__ import annotations

import importlib.util

from attnreport.errors import AttnReportError

ANALYSIS = ("torch", "transformers", "accelerate", "gguf", "safetensors")
CPU_TORCH_INDEX = "https://download.pytorch.org/whl/cpu"
INSTALL_ANALYSIS = f"pip install 'attnreport[analysis]' --extra-index-url {CPU_TORCH_INDEX}"


def missing(names: tuple[str, ...] = ANALYSIS) -> list[str]:
    """The modules of ``names`` that cannot be imported (found without importing them)."""
    return [name for name in names if importlib.util.find_spec(name) is None]


def require_analysis() -> None:
    """AttnReportError naming the ``analysis`` extra when any of its modules is absent."""
    absent = missing()
    if absent:
        raise AttnReportError(
            f"running a model needs the analysis extra ({', '.join(absent)} not installed): "
            f"{INSTALL_ANALYSIS} (the CPU build of torch; drop the index on a GPU machine)"
        )
