"""The study's steps on a session, typed (``docs/results-schema.md``): one sentence's
tables, the head roles and contrasts of the set, the interventions, the manifest.

One pass per sentence captures everything; layer records stream through the pure
analyses one at a time, so only one layer's n x n tensors are alive at once. The
interventions follow at the layer with the strongest pooled first-token focus. The one
pipeline that runs these steps over a corpus is ``attnreport.corpus.run_corpus``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np
import torch

from attnreport import __version__
from attnreport.analyses.role_pooling import RoleTotals
from attnreport.analyses.tables import Table, round_sig
from attnreport.bos_contrast import bos_contrast
from attnreport.checks import (
    check_sentence_choices,
    mean_sentence_indices,
    scaling_sentence_indices,
)
from attnreport.config import Settings
from attnreport.dates import analysis_date
from attnreport.errors import AttnReportError
from attnreport.interventions import GridCell as Cell
from attnreport.interventions import Outcome, input_grids, observed_layers
from attnreport.models.attending import attention_layers, check_attention_layer
from attnreport.models.described import rope_facts, tokenizer_kind
from attnreport.models.facts import layer_facts
from attnreport.models.layout import positional_scheme
from attnreport.pass_memo import remembered
from attnreport.probe_pass import probe_scores, session_probes
from attnreport.provenance import provenance
from attnreport.results import (
    GridCell,
    Interventions,
    ListedSentence,
    Manifest,
    MeanGrid,
    ModelInfo,
    ScalingGrid,
    SentenceResults,
    SetResults,
    StudySettings,
    TokensTable,
)
from attnreport.results.observed_blocks import block_size, blocked_cell, kept_baseline, kept_whole
from attnreport.results.pooling import pool_sentence_tables
from attnreport.results.roles import (
    HeadRolesBySentenceTable,
    HeadRolesSetTable,
    MassiveBySentenceTable,
    SetMassiveActivationsTable,
)
from attnreport.results.rounding import round_places
from attnreport.sentence_pass import LayerProgress, analyze_pass
from attnreport.sentences import Sentence, has_chat_template
from attnreport.session import Session, context_length
from attnreport.value_norms import value_norm_collector, value_norms


@dataclass(frozen=True)
class SentenceAnalysis:
    """One sentence's results and the tables the set-wide totals add up (as arrays)."""

    result: SentenceResults  # schema sentences/NNN.json
    focus: Table  # the focus table, kept as arrays for pooling
    head_impact: Table
    head_roles: Table
    massive_activations: Table
    value_norms: Table  # ``value_norms.COLUMNS``, collected in the same pass


def analyze_sentence(
    session: Session,
    sentence: Sentence,
    settings: Settings,
    on_layer: LayerProgress | None = None,
    maps_wanted: bool = True,
) -> SentenceAnalysis:
    """Every per-sentence table of ``sentence`` (schema ``sentences/NNN.json``) on
    ``session``'s model; each layer is analysed as soon as it has run and then dropped
    (``sentence_pass.analyze_pass``, which reports each to ``on_layer``). The result's
    per-query tables pool past ``map_tokens`` queries (``results.pooling``); the arrays
    the set-wide totals add up are every query's. ``maps_wanted`` False (a sentence whose
    results file is not kept): the result has no attention maps, and they are not made."""
    index = sentence.index
    ids = torch.tensor(sentence.token_ids)
    norms, observe = value_norm_collector()
    tables, maps = analyze_pass(
        session.model, session.specs, ids, settings, on_layer, observe, maps_wanted
    )
    assert tables.head_roles is not None and tables.massive_activations is not None
    result = SentenceResults(
        index=index,
        text=sentence.text,
        n_tokens=len(sentence.token_ids),
        tokens=TokensTable(
            position=np.arange(len(sentence.token_ids)),
            token=list(sentence.tokens),
            token_id=np.array(sentence.token_ids),
        ),
        tables=pool_sentence_tables(tables, settings.map_tokens),
        attention=maps,
        view_head=None if settings.view_head is None else tuple(settings.view_head),  # type: ignore[arg-type]
    )
    return SentenceAnalysis(
        result,
        tables.focus.arrays(),
        tables.head_impact.arrays(),
        tables.head_roles.arrays(),
        tables.massive_activations.arrays(),
        {k: np.asarray(v) for k, v in norms.items()},
    )


@dataclass(frozen=True)
class ProbeResult:
    """The induction probes' token ids and their scores (``probe_pass.probe_scores``)."""

    probes: list[list[int]]
    scores: dict[str, np.ndarray]


def run_probes(session: Session) -> ProbeResult:
    """The induction probes of ``session``'s model, run through it (once per loaded model)."""
    probes = session_probes(session)
    key = ("probes", tuple(tuple(p) for p in probes))
    scores = remembered(
        session.model,
        key,
        lambda: probe_scores(
            session.model, probes, [s.layer for s in session.specs], session.loaded.family
        ),
    )
    return ProbeResult(probes, scores)


def with_roles(result: SetResults, totals: RoleTotals, probe: ProbeResult) -> SetResults:
    """``result`` with the head roles: three set tables and the probes they were read on."""
    tables = totals.tables(probe.scores)
    return replace(
        result,
        head_roles=HeadRolesSetTable(**tables["head_roles"]),
        head_roles_by_sentence=HeadRolesBySentenceTable(**tables["head_roles_by_sentence"]),
        massive_activations=SetMassiveActivationsTable(**tables["massive_activations"]),
        massive_by_sentence=MassiveBySentenceTable(**tables["massive_by_sentence"]),
        probes=tuple(tuple(p) for p in probe.probes),
    )


def _observations(outcome: Outcome, observed: dict[str, int]) -> dict[str, np.ndarray]:
    """Observed layer name -> (head, query, key) p_ij at ``PROB_PLACES`` decimals."""
    return {
        name: round_places(outcome.probs[layer].float().cpu().numpy().astype(np.float64))
        for name, layer in observed.items()
    }


@dataclass(frozen=True)
class _Input:
    """How one input's cells are kept: ``base`` its unmodified pass's observations (and
    ``kept``, as the file keeps them), ``drawn`` whether a grid draws its maps, ``blocks``
    whether it is drawn as blocks."""

    base: dict[str, np.ndarray]
    kept: dict[str, Any]
    drawn: bool
    blocks: bool


def _cell(cell: Cell, observed: dict[str, int], kept: _Input, sentence: int | None) -> GridCell:
    """A typed grid cell: its KL, and per observation and head its gaps to uniform and its
    changes against the input's unmodified pass (``observed_blocks``); its maps only when a
    grid draws its input (whole, or as the grid's blocks), and, for a cell that changes V,
    not those of its own layer (the unmodified pass's by construction)."""
    probs = _observations(cell.outcome, observed)
    kl = [round_sig(float(v)) for v in cell.kl.cpu()]
    blocked, fields = blocked_cell(probs, kept.base)
    if not kept.drawn:
        observations, fields = {}, {**fields, "blocks": None}
    elif not kept.blocks:
        observations, fields = kept_whole(probs), {**fields, "blocks": None}
    else:
        observations = blocked
    if cell.target == "V" and observations:  # the file leaves them out (``UNCHANGED_BY_V``)
        observations["same"] = kept.kept["same"]
    return GridCell(cell.target, cell.setting, observations, kl, **fields, sentence=sentence)


def intervention_results(session: Session, settings: Settings, layer: int) -> Interventions:
    """Scaling and mean grids at ``layer`` (schema ``interventions.json``), input by input
    on one unmodified pass each (``interventions.input_grids``). The observations of a
    sentence longer than ``map_tokens`` cover its first ``map_tokens`` queries; those of
    more than ``GRID_TOKENS`` positions are kept as the blocks the grids draw
    (``results.observed_blocks``); the scaling cells of an input whose maps are not drawn
    keep their KL, gaps and changes only."""
    observed = observed_layers(layer, attention_layers(session.specs))
    ids = session.token_tensors()
    model, specs, leading = session.model, session.specs, settings.map_tokens
    scaled = scaling_sentence_indices(settings, len(ids))
    meaned = mean_sentence_indices(settings, len(ids))
    shown = settings.scaling_sentence
    bases, scaling, mean, before = {}, [], [], []
    for i in sorted({*scaled, *meaned}):
        eps = settings.epsilons if i in scaled else None
        grids = input_grids(model, specs, i, ids[i], layer, eps, i in meaned, leading)
        base = _observations(grids.base, observed)
        blocks = block_size(min(len(ids[i]), leading)) > 1
        bases[i] = kept_baseline(base, blocks)
        scaled_keep = _Input(base, bases[i], i == shown, blocks)
        scaling += [_cell(c, observed, scaled_keep, i) for c in grids.scaling]
        keep = _Input(base, bases[i], True, blocks)
        mean += [_cell(c, observed, keep, None) for c in grids.mean]
        before += [_cell(c, observed, keep, None) for c in grids.before_rotation]
    return Interventions(
        layer=layer,
        observed_layers=dict(observed),
        where=WHERE,
        epsilons=tuple(settings.epsilons),
        scaling=ScalingGrid(shown, bases[shown], tuple(scaling), tuple(scaled)),
        mean=MeanGrid(
            tuple(meaned),
            {i: bases[i] for i in meaned},
            tuple(mean),
            tuple(before),
            {i: tuple(session.sentences[i].tokens) for i in meaned},
        ),
    )


WHERE = (
    "q and k exactly as the model scores them (after its QK-norm and rotary transform, where it "
    "has them; an ALiBi bias is left unchanged), v after its projection"
)


def check_settings(settings: Settings, session: Session) -> None:
    """The checks that need the model and the sentence set, before any work starts (the
    rest ran when ``settings`` was made, and before the model loaded: ``checks``)."""
    n_layers = session.n_blocks
    layer = settings.intervene_layer
    if layer is not None:
        check_attention_layer(session.specs, layer, n_layers, "intervention layer")
    check_sentence_choices(settings, len(session.sentences))
    if settings.view_head is not None:
        view_layer, view_head = settings.view_head
        n_heads = session.specs[0].layout.n_heads
        if not 0 <= view_layer < n_layers:
            raise AttnReportError(
                f"view_head layer {view_layer} does not exist: the model has layers 0-{n_layers - 1}"
            )
        check_attention_layer(session.specs, view_layer, n_layers, "view_head layer")
        if not 0 <= view_head < n_heads:
            raise AttnReportError(
                f"view_head head {view_head} does not exist: the model has heads 0-{n_heads - 1}"
            )


def manifest(session: Session, settings: Settings) -> Manifest:
    """Model, tokenizer, settings, versions and sentences: what a reader needs to reproduce."""
    loaded, spec = session.loaded, session.specs[0]
    config = loaded.model.config
    scheme = positional_scheme(session.specs, loaded.model)
    model = ModelInfo(
        name=loaded.source.display_name,
        source=loaded.source.kind,
        fingerprint=loaded.fingerprint,
        model_type=config.model_type,
        family=loaded.family.name,
        positional=scheme,
        n_layers=session.n_blocks,  # a hybrid's blocks without attention too
        n_heads=spec.layout.n_heads,
        n_kv_heads=spec.layout.n_kv_heads,
        head_dim=spec.layout.head_dim,
        hidden_size=spec.layout.hidden_size,
        context=context_length(loaded),
        attn_implementation="eager",
        dtype=loaded.dtype,
        device=loaded.device,
        tokenizer=type(loaded.tokenizer).__name__,
        rope=rope_facts(config) if scheme == "rope" else {},
        tokenizer_kind=tokenizer_kind(loaded.tokenizer),
        vocab_size=len(loaded.tokenizer),
        has_chat_template=has_chat_template(loaded.tokenizer),
        features=tuple(model_features(session)),
        layer_windows={s.layer: s.window for s in session.specs if s.window is not None},
        layers=layer_facts(session.specs, session.n_blocks, scheme),
        extra={
            "bos_token": f"{'added' if session.bos_added else 'not added'} (--bos {session.bos})",
            **provenance(loaded),
        },
    )
    recorded = recorded_settings(settings, session.bos_added)
    sentences = tuple(
        ListedSentence(s.index, s.text, len(s.token_ids), tuple(s.token_ids))
        for s in session.sentences
    )
    return Manifest(__version__, model, recorded, sentences, analysed=analysis_date())


def recorded_settings(settings: Settings, bos_added: bool) -> StudySettings:
    """The manifest's settings: every setting that changes the numbers (``Settings.recorded``),
    and whether the tokenizer's BOS token was put before every sentence."""
    known = {f.name for f in fields(StudySettings)} - {"extra"}
    values = {**settings.recorded(), "bos_added": bos_added}
    typed = {k: tuple(v) if isinstance(v, list) else v for k, v in values.items() if k in known}
    extra = {k: v for k, v in values.items() if k not in known}
    return StudySettings(**typed, extra=extra)


def model_features(session: Session) -> list[str]:
    """What the model adds to plain attention (gqa, qk_norm, softcap, sliding_window, sinks, bos...)."""
    found = {f for spec in session.specs for f in spec.features} - {"rope", "alibi"}
    found |= set(session.loaded.family.architecture)
    if session.bos_added:
        found.add("bos")
    return sorted(found)


def with_contrasts(
    result: SetResults,
    session: Session,
    settings: Settings,
    norms: Mapping[int, Mapping[str, Any]] | None = None,
    on_sentence: Callable[[int, int], None] | None = None,
) -> SetResults:
    """``result`` with the BOS contrast (a pass of its own per sentence) and the value
    norms: ``norms`` (sentence -> the rows its analysis pass collected), else a pass of
    their own (the one-pass study and the corpus run both add them here).
    ``on_sentence(done, total)`` hears of each sentence of the BOS contrast."""
    return replace(
        result,
        bos_contrast=bos_contrast(session, settings, on_sentence),
        value_norms=value_norms(session, norms),
    )
