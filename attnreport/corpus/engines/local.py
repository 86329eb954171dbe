"""The local engine: every sentence in this process, one after the other."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from attnreport.corpus.engines import EngineContext
from attnreport.corpus.work import SentenceOutcome, analyze_one
from attnreport.sentences import Sentence


class LocalEngine:
    def __init__(self, context: EngineContext) -> None:
        self.context = context

    def analyze(self, sentences: Sequence[Sentence]) -> Iterator[SentenceOutcome]:
        for sentence in sentences:
            context = self.context
            yield analyze_one(
                context.session, sentence, context.settings, context.on_layer,
                context.keeps(sentence),
            )  # fmt: skip

    def close(self) -> None:
        return None


def check_available() -> None:
    return None


def open_engine(context: EngineContext) -> LocalEngine:
    return LocalEngine(context)
