"""A corpus run: ``attnreport analyze`` over any number of sentences, resumable.

The driver opens the session (model, tokenized sentences), stores the run fingerprint,
hands the unfinished sentences to an engine, and for each outcome as it arrives writes
the sentence's files and adds its partial sums to the set-wide totals; no sentence's
maps or tables stay in memory after they are written. When every sentence is finished
it writes ``set.json.gz`` (from the merged totals), ``interventions.json.gz`` (the
configured inputs, on the driver's model) and ``manifest.json``. ``serve --watch`` may
leave the grids out (its ``InterventionsAt`` gives None): the folder is then complete
without them and ``RunStore.add_files`` adds them when they have run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from attnreport.analyses.layer_choice import matched_layer, strongest_first_token_layer
from attnreport.config import Settings
from attnreport.corpus.engines import Engine, EngineContext, engine_module, open_engine
from attnreport.corpus.estimate import LongInputs, announce_all
from attnreport.corpus.fingerprint import run_fingerprint
from attnreport.corpus.partial import SetPartial
from attnreport.corpus.store import RunStore
from attnreport.errors import AttnReportError
from attnreport.output import check_output, input_paths
from attnreport.page_choice import kept_indices
from attnreport.pass_count import PassProgress, counting_passes, intervention_passes
from attnreport.results import Interventions
from attnreport.sentences import Sentence
from attnreport.session import Session, session_for
from attnreport.study import (
    check_settings,
    intervention_results,
    manifest,
    run_probes,
    with_contrasts,
    with_roles,
)

Progress = Callable[[str, int, int], None]  # (stage, done, total), as attnreport.build's
LAYERS = "capture:layers"  # the layers of the sentence being captured (local engine)
PASSES = "interventions:passes"  # the forward passes of the intervention grids
CONTRAST = "interventions:contrast"  # the sentences captured again in the other BOS condition
# (session, settings, layer) -> the interventions at that layer: ``intervention_results``,
# or what ``serve --watch`` passes to reuse the grids when their inputs did not change, or
# to leave them for later (None: no interventions file; the site goes up without the grids).
InterventionsAt = Callable[[Session, Settings, int], Interventions | None]


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
    settings: Settings,
    options: CorpusOptions = CorpusOptions(),
    force: bool = False,
    progress: Progress = _quiet,
    session: Session | None = None,
    interventions: InterventionsAt = intervention_results,
) -> CorpusSummary:
    """Analyse every sentence of ``settings.sentences`` into ``settings.out`` (resumable).

    ``session``: a model already loaded with these settings' sentences (``serve --watch``
    keeps one); None loads it. ``interventions`` makes the grids at the chosen layer."""
    out = Path(settings.out)
    check_output(out, input_paths(settings), force)
    if options.engine != "local" and settings.device_map is not None:
        raise AttnReportError(
            f"--device-map spreads one model over the GPUs, --engine {options.engine} gives each "
            "worker its own: use one or the other"
        )
    engine_module(options.engine)  # a missing optional dependency fails before the model loads
    progress("load", 0, 1)
    session = session or session_for(settings)
    check_settings(settings, session)
    kept = kept_indices(settings.pages, len(session.sentences), settings.scaling_sentence)
    store = RunStore(out, frozenset(kept))
    done = store.start(run_fingerprint(session, settings), options.resume)
    totals = SetPartial()
    for part in store.partials(done):
        totals.add(part)
    pending = [s for s in session.sentences if s.index not in done]
    progress("capture", len(done), len(session.sentences))
    if pending:
        context = EngineContext(
            session, settings, settings.model, settings.dtype, settings.device, options.ray_address,
            options.workers, lambda done, total: progress(LAYERS, done, total), store.kept,
        )  # fmt: skip
        engine = open_engine(options.engine, context)
        analyze_pending(engine, pending, store, totals, progress, options.engine == "local")
    progress("interventions", 0, 1)
    on_pass = lambda done, total: progress(PASSES, done, total)  # noqa: E731
    on_contrast = lambda done, total: progress(CONTRAST, done, total)  # noqa: E731
    files = set_files(session, settings, totals, interventions, on_pass, on_contrast)
    store.finish(files, manifest(session, settings), len(session.sentences))
    return CorpusSummary(store.out, len(session.sentences), len(done), store.count())


def analyze_pending(
    engine: Engine,
    pending: list[Sentence],
    store: RunStore,
    totals: SetPartial,
    progress: Progress,
    in_order: bool = True,
) -> None:
    """Write each outcome's files and add its sums as it arrives; close the engine after.
    A long input is announced just before it starts (``estimate``) when the engine runs
    the sentences one after the other, in order (``in_order``), else all at once."""
    total = len(totals) + len(pending)
    inputs, following, by_index = LongInputs(), iter(pending), {s.index: s for s in pending}
    if in_order:
        inputs.next(next(following, None))
    else:
        announce_all(pending)
    try:
        for outcome in engine.analyze(pending):
            store.write_sentence(outcome.index, outcome.data, outcome.partial)
            totals.add(outcome.partial)
            progress("capture", len(totals), total)
            if in_order:
                inputs.finished(by_index[outcome.index])
                inputs.next(next(following, None))
    finally:
        engine.close()


def set_files(
    session: Session,
    settings: Settings,
    totals: SetPartial,
    interventions_at: InterventionsAt = intervention_results,
    on_pass: PassProgress | None = None,
    on_contrast: PassProgress | None = None,
) -> dict[str, bytes]:
    """The set and interventions files of a finished corpus, serialised by the results
    package (``RunStore.finish`` adds the manifest, which lists every file); the set file
    alone when ``interventions_at`` leaves the grids for later.
    ``on_pass(done, total)`` hears of each forward pass of the intervention grids,
    ``on_contrast(done, total)`` of each sentence of the BOS contrast."""
    from attnreport.results.io import dump_json
    from attnreport.results.layout import CURRENT
    from attnreport.results.types import set_to_json

    result = with_contrasts(
        totals.set_results(), session, settings, totals.value_norms(), on_contrast
    )
    if totals.has_roles():
        result = with_roles(result, totals.roles, run_probes(session))
    layer = intervention_layer(settings, session, result.focus_pooled.arrays())
    passes = intervention_passes(session, settings, layer)
    with counting_passes(session.model, passes, on_pass):
        interventions = interventions_at(session, settings, layer)
    files = {CURRENT.set: CURRENT.encode(dump_json(set_to_json(result)))}
    if interventions is not None:
        files[CURRENT.interventions] = interventions_file(interventions)
    return files


def interventions_file(interventions: Interventions) -> bytes:
    """The bytes of ``interventions.json.gz`` (``CURRENT``'s name and encoding)."""
    from attnreport.results.interventions import interventions_to_json
    from attnreport.results.io import dump_json
    from attnreport.results.layout import CURRENT

    return CURRENT.encode(dump_json(interventions_to_json(interventions)))


def intervention_layer(settings: Settings, session: Session, pooled: Mapping[str, Any]) -> int:
    """The layer the interventions run in (``analyses.layer_choice``): ``intervene_layer``,
    else the attention layer nearest ``intervene_depth``, else the strongest first-token
    focus of the pooled ``focus_pooled`` columns."""
    from attnreport.models.attending import nearest_attention_layer

    if settings.intervene_layer is not None:
        return settings.intervene_layer
    if settings.intervene_depth is not None:
        block = matched_layer(settings.intervene_depth, session.n_blocks)
        return nearest_attention_layer(session.specs, block)  # a hybrid: nearest attention
    return strongest_first_token_layer(pooled)
