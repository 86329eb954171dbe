"""In-process measurements: capture + analyses vs the model's own pass, and the grids."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from attnreport.analyses import concat_tables, focus_table, head_impact_table, key_order
from attnreport.capture import capture_attention, installed_hooks
from attnreport.config import Settings
from attnreport.corpus.partial import SentencePartial, SetPartial
from attnreport.interventions import mean_grid, scaling_grid
from attnreport.session import Session
from attnreport.analyses.layer_choice import strongest_first_token_layer
from attnreport.checks import mean_sentence_indices
from attnreport.study import intervention_results


def timed(fn: Callable[[], Any], repeats: int) -> list[float]:
    """Wall times of ``repeats`` calls of ``fn``, after one untimed warm-up call."""
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def median_seconds(fn: Callable[[], Any], repeats: int) -> float:
    """Median wall time of ``repeats`` calls of ``fn`` (after one untimed warm-up call)."""
    return statistics.median(timed(fn, repeats))


def forward(session: Session, ids: torch.Tensor, attentions: bool) -> None:
    """The model's own forward pass (eager attention), optionally returning attentions."""
    with torch.no_grad():
        session.model(input_ids=ids[None], output_attentions=attentions, use_cache=False)


def capture_and_focus(session: Session, ids: torch.Tensor) -> None:
    """Our capture, every layer's decomposition, key order and focus statistics."""
    capture = capture_attention(session.model, session.specs, ids)
    for record in capture.records():
        focus_table(record, key_order(record.scores, record.allowed))


@dataclass(frozen=True)
class CaptureTiming:
    """One sentence: paired timings, the model's pass and ours back to back in each repeat."""

    index: int
    n_tokens: int
    model: list[float]  # forward with output_attentions=True
    ours: list[float]  # capture + decomposition + focus statistics

    @property
    def ratio(self) -> float:
        """Median of the per-repeat ratios (each pair ran under the same machine load)."""
        return statistics.median(o / m for o, m in zip(self.ours, self.model, strict=True))

    @property
    def best_ratio(self) -> float:
        """Fastest ours over fastest model pass: the least disturbed by other processes."""
        return min(self.ours) / min(self.model)


def capture_timings(session: Session, repeats: int) -> list[CaptureTiming]:
    """Per sentence: our capture + focus vs the model's pass with attentions, interleaved."""
    out = []
    for index, ids in enumerate(session.token_tensors()):
        model_fn = lambda ids=ids: forward(session, ids, True)  # noqa: E731
        ours_fn = lambda ids=ids: capture_and_focus(session, ids)  # noqa: E731
        model_fn(), ours_fn()
        pairs = [(_once(model_fn), _once(ours_fn)) for _ in range(repeats)]
        out.append(CaptureTiming(index, len(ids), [m for m, _ in pairs], [o for _, o in pairs]))
    return out


def _once(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def sentence_partial(session: Session, index: int, ids: torch.Tensor) -> SentencePartial:
    """One sentence's focus and head-impact tables over all layers, as ``analyze_sentence``
    computes them, as the partial sums the corpus run pools."""
    capture = capture_attention(session.model, session.specs, ids)
    records = list(capture.records(False))
    focus = concat_tables([focus_table(r, key_order(r.scores, r.allowed)) for r in records])
    return SentencePartial.of(index, focus, concat_tables([head_impact_table(r) for r in records]))


def intervention_layer(session: Session, settings: Settings) -> int:
    """The layer the corpus run intervenes at: the strongest pooled first-token focus.

    Only the focus and impact tables are computed (not every analysis), then pooled as
    the corpus run pools them, so the layer is the same one the build picks.
    """
    if settings.intervene_layer is not None:
        return settings.intervene_layer
    totals = SetPartial()
    for index, ids in enumerate(session.token_tensors()):
        totals.add(sentence_partial(session, index, ids))
    return strongest_first_token_layer(totals.tables()["focus_pooled"])


@dataclass(frozen=True)
class GridTiming:
    """One grid, timed in pairs: the grid, then the same passes as plain forward passes."""

    name: str
    grid: list[float]  # wall time of the grid, per repeat
    plain: list[float]  # its passes run as plain, unhooked forward passes, per repeat
    passes: int  # forward passes the grid runs
    attention_calls: int  # attention modules actually executed (replayed blocks skip them)
    n_layers: int

    @property
    def seconds(self) -> float:
        return statistics.median(self.grid)

    @property
    def multiple(self) -> float:
        """Median over repeats of the grid's cost in units of one plain pass on its inputs."""
        return statistics.median(
            g / (p / self.passes) for g, p in zip(self.grid, self.plain, strict=True)
        )

    @property
    def best_multiple(self) -> float:
        return min(self.grid) / (min(self.plain) / self.passes)


def count_attention_calls(session: Session, fn: Callable[[], Any]) -> int:
    """How many attention modules run during ``fn`` (a replayed block runs none)."""
    calls = [0]

    def hook(_module, _args, _kwargs):
        calls[0] += 1

    hooks = [(spec.attention, "pre", hook) for spec in session.specs]
    with installed_hooks(hooks):
        fn()
    return calls[0]


def _grid_plans(session: Session, settings: Settings, layer: int) -> list[tuple]:
    """(name, call, inputs of its passes) for both grids as ``intervention_results`` runs them."""
    ids = session.token_tensors()
    model, specs = session.model, session.specs
    means = {i: ids[i] for i in mean_sentence_indices(settings, len(ids))}
    scaling = [settings.scaling_sentence] * (1 + 3 * len(settings.epsilons))
    mean = [i for i in means for _ in range(4)]  # baseline + Q, K, V per sentence
    return [
        (
            "scaling grid",
            lambda: scaling_grid(model, specs, ids[scaling[0]], layer, settings.epsilons),
            scaling,
        ),
        ("mean grid", lambda: mean_grid(model, specs, means, layer), mean),
        (
            "intervention_results",
            lambda: intervention_results(session, settings, layer),
            scaling + mean,
        ),
    ]


def grid_timings(
    session: Session, settings: Settings, layer: int, repeats: int, warm_up: bool = True
) -> list[GridTiming]:
    """Both grids and the whole ``intervention_results``, each repeat paired with the same
    passes run as plain forward passes, so machine load affects both sides alike; after
    one untimed run of each when ``warm_up`` (quick mode, which judges nothing, skips it)."""
    ids = session.token_tensors()
    out = []
    for name, fn, used in _grid_plans(session, settings, layer):
        plain = lambda used=used: [forward(session, ids[i], False) for i in used]  # noqa: E731
        if warm_up:
            fn(), plain()
        pairs = [(_once(fn), _once(plain)) for _ in range(repeats)]
        calls = count_attention_calls(session, fn)
        grid, plain_s = [g for g, _ in pairs], [p for _, p in pairs]
        out.append(GridTiming(name, grid, plain_s, len(used), calls, len(session.specs)))
    return out
