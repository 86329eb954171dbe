"""Corpus runs: thousands of sentences, resumable, on one machine or a Ray cluster.

``run_corpus(config, CorpusOptions(engine=..., resume=...))`` is what ``attnreport
analyze`` calls; see ``run`` (the driver), ``engines`` (local, ray), ``partial``
(exact set-wide merging), ``store`` (the one writer), ``fingerprint`` (resume checks)
and ``pages`` (which sentences get a page).

The names below are imported on first use, so that ``render`` (which reads ``pages``)
imports neither torch nor transformers.
"""

from __future__ import annotations

import importlib
from typing import Any

_HOMES = {
    name: "attnreport.corpus.run" for name in ("CorpusOptions", "CorpusSummary", "run_corpus")
}

__all__ = ["CorpusOptions", "CorpusSummary", "run_corpus"]


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name]), name)
