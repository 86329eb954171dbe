"""Run the whole study on a session and return JSON-ready results (``docs/results-schema.md``).

One pass per sentence captures everything; layer records stream through the pure
analyses one at a time, so only one layer's n x n tensors are alive at once. The
interventions follow at the layer with the strongest pooled first-token focus.
``attnreport analyze`` writes these results; ``attnreport build`` draws them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

import numpy as np
import torch

from attnreport import __version__
from attnreport.analyses import (
    analyze_layer,
    attention_triangles,
    key_order,
    merge_layers,
    pool_focus,
    pool_impact,
    table_to_json,
)
from attnreport.analyses.tables import round_sig, triangle
from attnreport.capture import capture_attention
from attnreport.errors import AttnReportError
from attnreport.interventions import GridCell, Outcome, mean_grid, observed_layers, scaling_grid
from attnreport.records import LayerRecord
from attnreport.session import Session, context_length

SCHEMA = "attnreport.results/1"
Step = Callable[[str], None]  # called once per finished unit of work, with its stage name


@dataclass(frozen=True)
class Settings:
    """Everything that changes the numbers; recorded in the manifest."""

    breakdown_ranks: int = 3
    epsilons: tuple[float, ...] = (5e-1, 1e-3, 1e-10)
    intervene_layer: int | None = None  # None: the layer with the highest pooled first-token focus
    scaling_sentence: int = 0
    mean_sentences: tuple[int, ...] | None = None  # None: the first three sentences
    map_tokens: int = 256  # attention maps (n x n per head) are kept up to this many tokens
    view_head: tuple[int, ...] | None = None  # (layer, head) the pages open on; None: computed


@dataclass
class StudyResults:
    manifest: dict[str, Any]
    sentences: list[dict[str, Any]] = field(default_factory=list)
    set: dict[str, Any] = field(default_factory=dict)
    interventions: dict[str, Any] = field(default_factory=dict)

    def files(self) -> dict[str, bytes]:
        """The results directory: relative path -> canonical JSON bytes."""
        out = {"manifest.json": dump_json(self.manifest), "set.json": dump_json(self.set)}
        out["interventions.json"] = dump_json(self.interventions)
        for sentence in self.sentences:
            out[f"sentences/{sentence['sentence']['index']:03d}.json"] = dump_json(sentence)
        return out


def dump_json(value: Any) -> bytes:
    """Canonical JSON: sorted keys, no NaN, UTF-8; identical input gives identical bytes."""
    text = json.dumps(
        value, sort_keys=True, ensure_ascii=False, allow_nan=False, separators=(",", ":")
    )
    return (text + "\n").encode("utf-8")


def _noop(_stage: str) -> None:
    return None


@dataclass(frozen=True)
class SentenceAnalysis:
    json: dict[str, Any]  # schema sentences/NNN.json
    focus: dict[str, np.ndarray]  # the focus table, kept as arrays for pooling
    head_impact: dict[str, np.ndarray]


def analyze_sentence(session: Session, index: int, settings: Settings) -> SentenceAnalysis:
    """Every per-sentence table of one sentence (schema ``sentences/NNN.json``)."""
    sentence = session.sentences[index]
    capture = capture_attention(session.model, session.specs, torch.tensor(sentence.token_ids))
    keep_maps = len(sentence.token_ids) <= settings.map_tokens
    per_layer, maps = [], {"scores": [], "probs": [], "ranks": []}
    for record in capture.records():
        record = to_cpu(record)
        order = key_order(record.scores, record.allowed)
        per_layer.append(analyze_layer(record, settings.breakdown_ranks, order))
        if keep_maps:
            for name, value in attention_triangles(record, order).items():
                maps[name].append(value)
    tables = merge_layers(per_layer)
    tokens = {
        "position": np.arange(len(sentence.token_ids)),
        "token": np.array(sentence.tokens, dtype=object),
        "token_id": np.array(sentence.token_ids),
    }
    result = {
        "schema": SCHEMA,
        "sentence": {"index": index, "text": sentence.text, "n_tokens": len(sentence.token_ids)},
        "tokens": table_to_json(tokens),
        "attention": maps if keep_maps else None,
        "tables": {name: table_to_json(table) for name, table in tables.items()},
    }
    if settings.view_head is not None:
        result["view_head"] = list(settings.view_head)
    return SentenceAnalysis(result, tables["focus"], tables["head_impact"])


def to_cpu(record: LayerRecord) -> LayerRecord:
    """Analyses work on CPU tensors; a no-op for a model on the CPU."""
    if record.scores.device.type == "cpu":
        return record
    moved = {
        f.name: getattr(record, f.name).cpu()
        for f in fields(record)
        if isinstance(getattr(record, f.name), torch.Tensor)
    }
    return replace(record, terms={k: v.cpu() for k, v in record.terms.items()}, **moved)


def set_results(analyses: list[SentenceAnalysis]) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Set-wide tables (schema ``set.json``) and the pooled focus table as arrays."""
    by_sentence, pooled, pooled_sorted = pool_focus([a.focus for a in analyses])
    impact = pool_impact([a.head_impact for a in analyses])
    tables = {
        "focus_by_sentence": by_sentence,
        "focus_pooled": pooled,
        "focus_sorted": pooled_sorted,
        "impact_pooled": impact,
    }
    return {"schema": SCHEMA, "tables": {k: table_to_json(v) for k, v in tables.items()}}, pooled


def strongest_first_token_layer(pooled: dict[str, np.ndarray]) -> int:
    """The layer whose heads, on average, most often put their top target on the first token."""
    rows = pooled["statistic"] == "first_focus"
    layers, values = pooled["layer"][rows], pooled["value"][rows]
    means = np.array([values[layers == layer].mean() for layer in np.unique(layers)])
    return int(np.unique(layers)[int(np.argmax(means))])  # argmax: ties to the lower layer


def _observations(outcome: Outcome, observed: dict[str, int]) -> dict[str, Any]:
    return {
        name: [triangle(head) for head in outcome.probs[layer].cpu()]
        for name, layer in observed.items()
    }


def _cell_json(cell: GridCell, key: str, observed: dict[str, int]) -> dict[str, Any]:
    return {
        "target": cell.target,
        key: cell.setting,
        "observations": _observations(cell.outcome, observed),
        "kl": [round_sig(float(v)) for v in cell.kl.cpu()],
    }


def intervention_results(session: Session, settings: Settings, layer: int) -> dict[str, Any]:
    """Scaling and mean grids at ``layer`` (schema ``interventions.json``)."""
    n_layers = len(session.specs)
    observed = observed_layers(layer, n_layers)
    ids = session.token_tensors()
    base, cells = scaling_grid(
        session.model, session.specs, ids[settings.scaling_sentence], layer, settings.epsilons
    )
    mean_inputs = mean_sentence_indices(settings, len(ids))
    baselines, mean_cells = mean_grid(
        session.model, session.specs, {i: ids[i] for i in mean_inputs}, layer
    )
    return {
        "schema": SCHEMA,
        "layer": layer,
        "observed_layers": observed,
        "where": WHERE,
        "epsilons": list(settings.epsilons),
        "scaling": {
            "sentence": settings.scaling_sentence,
            "baseline": _observations(base, observed),
            "cells": [_cell_json(c, "epsilon", observed) for c in cells],
        },
        "mean": {
            "sentences": list(mean_inputs),
            "baselines": {str(i): _observations(b, observed) for i, b in baselines.items()},
            "cells": [_cell_json(c, "sentence", observed) for c in mean_cells],
        },
    }


WHERE = (
    "q and k exactly as the model scores them (after its QK-norm and rotary transform, where it "
    "has them; an ALiBi bias is left unchanged), v after its projection"
)


def mean_sentence_indices(settings: Settings, n_sentences: int) -> tuple[int, ...]:
    chosen = settings.mean_sentences or tuple(range(min(3, n_sentences)))
    bad = [i for i in chosen if not 0 <= i < n_sentences]
    if bad:
        raise AttnReportError(
            f"mean-grid sentence {bad[0] + 1} does not exist (the set has {n_sentences})"
        )
    return chosen


def check_settings(settings: Settings, session: Session) -> None:
    """Settings that depend on the model and set, checked before any work starts."""
    n_layers = len(session.specs)
    layer = settings.intervene_layer
    if layer is not None and not 0 <= layer < n_layers:
        raise AttnReportError(
            f"intervention layer {layer} is out of range: the model has layers 0-{n_layers - 1}"
        )
    if not 0 <= settings.scaling_sentence < len(session.sentences):
        raise AttnReportError(f"scaling sentence {settings.scaling_sentence} does not exist")
    if any(not (isinstance(e, float) and e > 0 and np.isfinite(e)) for e in settings.epsilons):
        raise AttnReportError(f"epsilons must be positive numbers, got {list(settings.epsilons)}")
    if settings.view_head is not None:
        view_layer, view_head = settings.view_head
        n_heads = session.specs[0].layout.n_heads
        if not 0 <= view_layer < n_layers:
            raise AttnReportError(
                f"view_head layer {view_layer} does not exist: the model has layers 0-{n_layers - 1}"
            )
        if not 0 <= view_head < n_heads:
            raise AttnReportError(
                f"view_head head {view_head} does not exist: the model has heads 0-{n_heads - 1}"
            )
    if settings.breakdown_ranks < 1:
        raise AttnReportError("breakdown ranks must be at least 1")
    mean_sentence_indices(settings, len(session.sentences))


def manifest(session: Session, settings: Settings) -> dict[str, Any]:
    """Model, tokenizer, settings, versions and sentences: what a reader needs to reproduce."""
    loaded, spec = session.loaded, session.specs[0]
    config = loaded.model.config
    return {
        "schema": SCHEMA,
        "attnreport_version": __version__,
        "model": {
            "name": loaded.source.display_name,
            "source": loaded.source.kind,
            "fingerprint": loaded.fingerprint,
            "model_type": config.model_type,
            "family": loaded.family.name,
            "positional": loaded.family.positional,
            "features": model_features(session),
            "bos_token": f"{'added' if session.bos_added else 'not added'} (--bos {session.bos})",
            "n_layers": len(session.specs),
            "n_heads": spec.layout.n_heads,
            "n_kv_heads": spec.layout.n_kv_heads,
            "head_dim": spec.layout.head_dim,
            "hidden_size": spec.layout.hidden_size,
            "context": context_length(loaded),
            "attn_implementation": "eager",
            "dtype": loaded.dtype,
            "device": loaded.device,
            "tokenizer": type(loaded.tokenizer).__name__,
        },
        "settings": {
            **{k: list(v) if isinstance(v, tuple) else v for k, v in asdict(settings).items()},
            "bos": session.bos,
            "bos_added": session.bos_added,
        },
        "sentences": [
            {
                "index": s.index,
                "text": s.text,
                "n_tokens": len(s.token_ids),
                "token_ids": list(s.token_ids),
            }
            for s in session.sentences
        ],
    }


def model_features(session: Session) -> list[str]:
    """What the model adds to plain attention (gqa, qk_norm, softcap, sliding_window, sinks, bos...)."""
    found = {f for spec in session.specs for f in spec.features} - {"rope", "alibi"}
    found |= set(session.loaded.family.architecture)
    if session.bos_added:
        found.add("bos")
    return sorted(found)


def run_study(session: Session, settings: Settings, step: Step = _noop) -> StudyResults:
    """Capture and analyse every sentence, pool the set, run the interventions."""
    check_settings(settings, session)
    analyses = []
    for index in range(len(session.sentences)):
        analyses.append(analyze_sentence(session, index, settings))
        step("capture")
    set_json, pooled = set_results(analyses)
    results = StudyResults(manifest(session, settings), [a.json for a in analyses], set_json)
    layer = settings.intervene_layer
    if layer is None:
        layer = strongest_first_token_layer(pooled)
    results.interventions = intervention_results(session, settings, layer)
    step("interventions")
    return results
