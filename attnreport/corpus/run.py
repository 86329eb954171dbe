"""A corpus run: ``attnreport analyze`` over any number of sentences, resumable.

The driver opens the session (model, tokenized sentences), stores the run fingerprint,
hands the unfinished sentences to an engine, and for each outcome as it arrives writes
the sentence's files and adds its partial sums to the set-wide totals; no sentence's
maps or tables stay in memory after they are written. When every sentence is finished
it writes ``set.json`` (from the merged totals), ``interventions.json`` (the configured
inputs, on the driver's model) and ``manifest.json``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from attnreport.config import Config
from attnreport.corpus.engines import Engine, EngineContext, engine_module, open_engine
from attnreport.corpus.fingerprint import run_fingerprint
from attnreport.corpus.partial import SetPartial
from attnreport.corpus.store import RunStore
from attnreport.sentences import Sentence
from attnreport.session import Session, open_session
from attnreport.study import (
    SCHEMA,
    check_settings,
    dump_json,
    intervention_results,
    manifest,
    strongest_first_token_layer,
)

Progress = Callable[[str, int, int], None]  # (stage, done, total), as attnreport.build's


def _quiet(_stage: str, _done: int, _total: int) -> None:
    return None


@dataclass(frozen=True)
class CorpusOptions:
    """How to run: ``engine`` (``local`` | ``ray``), ``resume`` an earlier run, Ray details."""

    engine: str = "local"
    resume: bool = False
    ray_address: str | None = None
    workers: int | None = None


@dataclass(frozen=True)
class CorpusSummary:
    out: Path
    sentences: int  # in the corpus
    resumed: int  # already finished when the run started
    files: int


def run_corpus(
    config: Config,
    options: CorpusOptions = CorpusOptions(),
    force: bool = False,
    progress: Progress = _quiet,
) -> CorpusSummary:
    """Analyse every sentence of ``config.sentences`` into ``config.out`` (resumable)."""
    from attnreport.build import check_output, input_paths, settings_of

    out = Path(config.out)
    check_output(out, input_paths(config), force)
    engine_module(options.engine)  # a missing optional dependency fails before the model loads
    progress("load", 0, 1)
    session = open_session(
        config.model, config.sentences, config.dtype, config.device, config.truncate
    )
    settings = settings_of(config)
    check_settings(settings, session)
    store = RunStore(out)
    done = store.start(run_fingerprint(session, settings), options.resume)
    totals = SetPartial()
    for part in store.partials(done):
        totals.add(part)
    pending = [s for s in session.sentences if s.index not in done]
    progress("capture", len(done), len(session.sentences))
    if pending:
        context = EngineContext(
            session, settings, config.model, config.dtype, config.device, options.ray_address,
            options.workers,
        )  # fmt: skip
        analyze_pending(open_engine(options.engine, context), pending, store, totals, progress)
    progress("interventions", 0, 1)
    store.finish(set_files(session, settings, totals))
    return CorpusSummary(store.out, len(session.sentences), len(done), store.count())


def analyze_pending(
    engine: Engine,
    pending: list[Sentence],
    store: RunStore,
    totals: SetPartial,
    progress: Progress,
) -> None:
    """Write each outcome's files and add its sums as it arrives; close the engine after."""
    total = len(totals) + len(pending)
    try:
        for outcome in engine.analyze(pending):
            store.write_sentence(outcome.index, outcome.json, outcome.partial)
            totals.add(outcome.partial)
            progress("capture", len(totals), total)
    finally:
        engine.close()


def set_files(session: Session, settings, totals: SetPartial) -> dict[str, bytes]:
    """``set.json``, ``interventions.json`` and ``manifest.json`` of a finished corpus."""
    from attnreport.analyses import table_to_json

    tables = totals.tables()
    set_json = {"schema": SCHEMA, "tables": {k: table_to_json(v) for k, v in tables.items()}}
    layer = settings.intervene_layer
    if layer is None:
        layer = strongest_first_token_layer(tables["focus_pooled"])
    return {
        "set.json": dump_json(set_json),
        "interventions.json": dump_json(intervention_results(session, settings, layer)),
        "manifest.json": dump_json(manifest(session, settings)),
    }
