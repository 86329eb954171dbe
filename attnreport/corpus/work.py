"""One sentence's work, as every engine runs it: wraps ``study.analyze_sentence``."""

from __future__ import annotations

from dataclasses import dataclass

from attnreport.config import Settings
from attnreport.corpus.partial import SentencePartial
from attnreport.corpus.pooled import pooled_sources
from attnreport.results.sentence_files import sentence_files
from attnreport.sentence_pass import LayerProgress
from attnreport.sentences import Sentence
from attnreport.session import Session
from attnreport.study import analyze_sentence


@dataclass(frozen=True)
class SentenceOutcome:
    """A finished sentence: its results files' bytes by name (``sentences/NNN.json.gz``,
    gzip-compressed: a Ray worker compresses before it sends, and its map parts:
    ``results.sentence_files``), or None for a sentence whose files are not kept (no
    page: only its partial sums feed the set tables), and its partial sums."""

    index: int
    data: dict[str, bytes] | None
    partial: SentencePartial


def analyze_one(
    session: Session,
    sentence: Sentence,
    settings: Settings,
    on_layer: LayerProgress | None = None,
    keep: bool = True,
) -> SentenceOutcome:
    """Analyse ``sentence`` on ``session``'s model (its sentence list is not needed);
    ``on_layer(done, total)`` hears of each layer; ``keep``: make its results file (else
    only its partial sums: ``page_choice.kept_indices``)."""
    result = analyze_sentence(session, sentence, settings, on_layer, maps_wanted=keep)
    partial = SentencePartial.of(
        sentence.index, result.focus, result.head_impact, result.head_roles,
        result.massive_activations, pooled_sources(result.result.tables), result.value_norms,
    )  # fmt: skip
    if not keep:
        return SentenceOutcome(sentence.index, None, partial)
    # Streamed, so one table column's Python values exist at a time; compressed at once
    # (the JSON, then about 0.4 of it compressed, are the largest copies held).
    files = sentence_files(result.result, lazy=True)
    return SentenceOutcome(sentence.index, files, partial)
