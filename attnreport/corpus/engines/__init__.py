"""Engines run the per-sentence work; the corpus run writes and merges what they return.

An engine is opened from an ``EngineContext`` and yields one ``SentenceOutcome`` per
sentence it is given, in the order they finish, each exactly once. ``local`` runs them
in this process; ``ray`` on Ray actors (``attnreport[ray]``). To add one: a module with
an ``open_engine(context) -> Engine`` function, listed in ``ENGINES``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from attnreport.config import Settings
from attnreport.corpus.work import SentenceOutcome
from attnreport.errors import AttnReportError
from attnreport.sentences import Sentence
from attnreport.session import Session

ENGINES = {"local": "attnreport.corpus.engines.local", "ray": "attnreport.corpus.engines.cluster"}


@dataclass(frozen=True)
class EngineContext:
    """What an engine needs: the driver's session, the settings, and how to load the model."""

    session: Session
    settings: Settings
    model: str  # the --model value, for workers that load their own copy
    dtype: str
    device: str
    ray_address: str | None = None  # an existing Ray cluster; None: start a local one
    workers: int | None = None  # None: one per CPU (or GPU) of the cluster
    on_layer: Callable[[int, int], None] | None = None  # layers done in the sentence(s) in flight
    kept: frozenset[int] | None = None  # sentences whose results file is made; None: all

    def keeps(self, sentence: Sentence) -> bool:
        """Whether ``sentence``'s results file is made (``page_choice.kept_indices``)."""
        return self.kept is None or sentence.index in self.kept


class Engine(Protocol):
    def analyze(self, sentences: Sequence[Sentence]) -> Iterator[SentenceOutcome]:
        """One ``SentenceOutcome`` per sentence, in the order they finish."""
        ...

    def close(self) -> None: ...


def engine_module(name: str) -> Any:
    """The module of engine ``name``; raises a one-line error when it cannot run here
    (unknown name, or its optional dependency is missing), before any model is loaded."""
    if name not in ENGINES:
        raise AttnReportError(f"unknown engine {name!r} (use {', '.join(ENGINES)})")
    module = importlib.import_module(ENGINES[name])
    module.check_available()
    return module


def open_engine(name: str, context: EngineContext) -> Engine:
    """The engine ``name`` (``local`` or ``ray``), ready to analyze sentences."""
    return engine_module(name).open_engine(context)
