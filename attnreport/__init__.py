"""attnreport: capture a causal LM's attention exactly and publish it as a static site.

The Python API (``attnreport.api``), on a model you already hold::

    study = attnreport.analyze(model, tokenizer, ["The cat sat on the mat."])
    study.figure("attention-map", layer=3, head=2)   # inline in a notebook
    attnreport.render(study, "site")                 # the report, as a static site

``analyze`` and ``verify`` run the model (torch, transformers: the ``analysis`` extra);
``load``, ``render`` and a ``Study``'s tables and figures do not. The names are imported
when first used, so ``import attnreport`` loads none of them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_HOMES = {
    "analyze": "attnreport.api.analysis",
    "verify": "attnreport.api.analysis",
    "load": "attnreport.api.study",
    "Study": "attnreport.api.study",
    "render": "attnreport.api.publishing",
    "AttnReportError": "attnreport.errors",
    "Check": "attnreport.verification",
}

__all__ = ["analyze", "verify", "Study", "load", "render", "AttnReportError", "Check"]

if TYPE_CHECKING:
    from attnreport.api.analysis import analyze, verify
    from attnreport.api.publishing import render
    from attnreport.api.study import Study, load
    from attnreport.errors import AttnReportError
    from attnreport.verification import Check


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOMES[name]), name)
    globals()[name] = value  # the next lookup finds it without this hook
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
