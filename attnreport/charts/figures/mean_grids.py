"""Figures 12 and 13: attention after replacing Q, K or V by its mean over the positions,
taken after the rotary rotation (as the attention function receives them) and before it.

Rows are the inputs; the first column is each input's unmodified run, so that every
observed layer (the same, the next, the last) can be read against it. Input is
``interventions.json`` as loaded (``results.interventions.MeanGrid``).
"""

from __future__ import annotations

from collections.abc import Sequence

from attnreport.charts.figure import Figure
from attnreport.charts.figures.grids import TARGETS, UNMODIFIED, mean_chart
from attnreport.charts.figures.interventions import (
    default_head,
    grid_figure,
    grid_rows,
    n_heads_of,
    shown_tokens,
    tokens_of,
    unmodified,
)
from attnreport.charts.figures.kl_strip import series, strip_of, together_sentence
from attnreport.results import GridCell, Interventions, Manifest, SentenceResults
from attnreport.text import display_token

AFTER = (
    "with Q replaced, every current token scores the targets alike; with K replaced, "
    "every target gets the same score, so attention is uniform by construction; replacing V "
    "leaves this layer's weights unchanged, so observe the next or last layer"
)
BEFORE = (
    "the mean is taken before the rotary rotation and rotated again per position, "
    "R_i mean_j(R_j^-1 x_j): every key (or query) keeps its position's rotation, so the "
    "maps can keep a positional structure that the mean after the rotation erases; V is "
    "not rotated, so its cell is the one of the figure before"
)


def _input_label(index: int, manifest: Manifest) -> str:
    listed = {s.index: s.text for s in manifest.sentences}
    text = listed.get(index, "").strip()
    short = display_token(text[:28] + ("\u2026" if len(text) > 28 else "")) if text else ""
    return f"sentence {index}" + (f": {short}" if short else "")


def _ordered(cells: Sequence[GridCell], chosen: list[int], targets: Sequence[str]) -> list:
    place = {(i, t): k for k, (i, t) in enumerate((i, t) for i in chosen for t in targets)}
    return sorted(cells, key=lambda c: place.get((int(c.setting), c.target), len(place)))


def _with_unmodified(cells: list[GridCell], baselines: dict, chosen: list[int]) -> list[GridCell]:
    """Per input, its unmodified run (one cell, target ``UNMODIFIED``) before its cells."""
    out = []
    for i in chosen:
        own = [c for c in cells if int(c.setting) == i]
        if own and i in baselines:
            out += unmodified(baselines[i], own[0], (UNMODIFIED,), i)
        out += own
    return out


def _mean_grid_figure(
    key: str,
    titles: tuple[str, str],
    caption: str,
    cells: Sequence[GridCell],
    interventions: Interventions,
    sentence: SentenceResults,
    manifest: Manifest,
    sentences: Sequence[SentenceResults] | None,
) -> Figure:
    """A grid of ``cells`` (an input's cells share its ``setting``), rows inputs, columns
    the unmodified run then the targets the cells have; ``titles``: the figure's and the
    chart's."""
    mean = interventions.mean
    chosen = list(mean.drawn)
    targets = tuple(t for t in TARGETS if any(c.target == t for c in cells))
    cells = _ordered(cells, chosen, targets)
    n_heads = n_heads_of(cells)
    known = [sentence, *(sentences or [])]
    cell_of = {int(c.setting): c for c in cells}  # any of an input's cells: same positions
    tokens, shown = {}, []
    for i in chosen:
        t = tokens_of(i, known)
        if t is None and i in mean.tokens:  # an input without a sentence file of its own
            t = [display_token(token) for token in mean.tokens[i]]
        labels, sentence_text = shown_tokens(t or [], cell_of[i]) if i in cell_of else (t, "")
        if t is not None:
            tokens[str(i)] = labels
        shown.append(sentence_text)
    head = default_head(sentence, n_heads)
    observed = dict(interventions.observed_layers)
    texts = {str(s.index): display_token(s.text) for s in manifest.sentences if s.index in chosen}
    labels = {i: _input_label(i, manifest) for i in chosen}
    rows = grid_rows(
        _with_unmodified(cells, mean.baselines, chosen),
        n_heads,
        lambda c: {"sentence": int(c.setting), "input": labels[int(c.setting)], "target": c.target},
    )
    strip = strip_of(series(rows[(head, "same")], "input", "target"), list(targets))
    charts = [
        mean_chart(key, tokens, n_heads, observed, head, strip, texts, targets, titles[1], phone)
        for phone in (False, True)
    ]
    what = " or ".join(targets) if len(targets) < 3 else "Q, K or V"
    inputs = f"each of {len(chosen)} inputs (rows)"
    if len(chosen) < len(mean.sentences):
        n = len(mean.sentences)
        inputs = f"the first {len(chosen)} of its {n} inputs (rows; the claims read all {n})"
    text = (
        f"Layer {interventions.layer}: for {inputs}, {what} "
        f"(columns, after the unmodified run) of every head is replaced by its mean over the "
        f"token positions and attention is recomputed in a real forward pass; each cell is the "
        f"post-softmax attention map of the chosen head. {caption} Below, the KL divergence of "
        "the next-token distribution per position."
    ) + together_sentence(strip)
    return grid_figure(key, titles[0], text + "".join(dict.fromkeys(shown)), charts, rows, head)


def mean_figure(
    interventions: Interventions,
    sentence: SentenceResults,
    manifest: Manifest,
    sentences: Sequence[SentenceResults] | None = None,
) -> Figure:
    """Fig 12: the mean taken as the attention function receives q, k and v (after the
    rotary rotation, where the model has one). Token texts of the inputs come from
    ``sentence`` and ``sentences``; an input found in neither shows positions ("#3")."""
    mean = interventions.mean
    return _mean_grid_figure(
        "mean-grid",
        ("Replacing Q, K and V by their mean", "Attention after replacing Q, K or V by its mean"),
        AFTER[0].upper() + AFTER[1:] + ".",
        mean.cells, interventions, sentence, manifest, sentences,
    )  # fmt: skip


def mean_before_rotation_figure(
    interventions: Interventions,
    sentence: SentenceResults,
    manifest: Manifest,
    sentences: Sequence[SentenceResults] | None = None,
) -> Figure:
    """Fig 13: Q and K replaced by their mean taken before the rotary rotation (rotary
    models only: ``MeanGrid.before_rotation``)."""
    mean = interventions.mean
    return _mean_grid_figure(
        "mean-grid-before-rotation",
        (
            "Replacing Q and K by their mean before the rotation",
            "Attention after replacing Q or K by its mean before the rotation",
        ),
        BEFORE[0].upper() + BEFORE[1:] + ".",
        mean.before_rotation, interventions, sentence, manifest, sentences,
    )  # fmt: skip
