"""One sentence's attention maps: the scores the results keep, and what derives from them.

A sentence file (schema version 3) keeps, per (layer, head), the causal triangle of the
scores ``s_ij`` the softmax read (after scaling and any soft-cap; ``None`` where a window
masks the key), the learned sink logit of each head for a model that has them (gpt-oss),
and the few rows whose key order the written 6-digit scores do not give (``rank_fixes``:
two scores of the row equal after rounding, whose unrounded order is the other way).
Probabilities and ranks are derived here, in numpy, when first read:

- ``probs``: softmax over the row's unmasked keys and the sink logit (if any); masked
  cells 0. With a sink, a row's probabilities over real keys sum to ``1 - sink share``.
- ``ranks``: a key's place in its row by score descending, ties to the lower key (the
  analysis' ``KeyOrder``); masked cells -1; a row in ``rank_fixes`` takes those ranks.

Version 1 and 2 files also stored ``probs`` and ``ranks``: ``from_stored`` keeps their
probabilities as written, turns their ranks into ``rank_fixes`` and recovers the sink
logits from the probabilities, so a version-3 dump of them loses nothing.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from attnreport.jsontypes import Json

Triangle = list[list[Any]]  # tri[i] holds keys 0..i of query row i
Row = tuple[int, int, int]  # (layer, head, query)
SINK_EVIDENCE = 1e-4  # a stored row whose probabilities sum below 1 - this shows a sink


def triangle_index(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row, key, row start) of every cell of an n-row triangle flattened row by row."""
    rows = np.repeat(np.arange(n), np.arange(1, n + 1))
    starts = np.arange(n) * np.arange(1, n + 1) // 2
    return rows, np.arange(len(rows)) - starts[rows], starts


def flat(triangle: Triangle) -> np.ndarray:
    """A triangle as one float64 array, row by row; ``None`` (masked) becomes NaN."""
    return np.array(list(itertools.chain.from_iterable(triangle)), dtype=np.float64)


def unflat(values: np.ndarray, n: int) -> Triangle:
    """Inverse of ``flat`` for n rows (NaN stays NaN)."""
    items = values.tolist()
    return [items[i * (i + 1) // 2 : (i + 1) * (i + 2) // 2] for i in range(n)]


def row_ranks(rows: np.ndarray, keys: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """Rank of every flat cell in its row: score descending, ties to the lower key; NaN
    (masked) cells sort last and get -1."""
    valid = ~np.isnan(scores)
    order = np.lexsort((keys, -np.where(valid, scores, -np.inf), rows))
    starts = np.flatnonzero(np.r_[True, rows[order][1:] != rows[order][:-1]])
    first = np.repeat(starts, np.diff(np.r_[starts, len(order)]))
    ranks = np.empty(len(order), dtype=np.int64)
    ranks[order] = np.arange(len(order)) - first
    return np.where(valid, ranks, -1)


def row_probs(rows: np.ndarray, starts: np.ndarray, scores: np.ndarray, sink: float | None):
    """Softmax of every flat row over its unmasked cells and the ``sink`` logit (if any),
    float64; NaN (masked) cells get 0."""
    valid = ~np.isnan(scores)
    filled = np.where(valid, scores, -np.inf)
    top = np.maximum.reduceat(filled, starts)
    if sink is not None:
        top = np.maximum(top, sink)
    weights = np.where(valid, np.exp(filled - top[rows]), 0.0)
    total = np.add.reduceat(weights, starts)
    if sink is not None:
        total = total + np.exp(sink - top)
    return weights / total[rows]


def _fix_rows(fixes: dict[Row, tuple[int, ...]], layer: int, head: int, ranks, starts) -> None:
    for (la, h, q), row in fixes.items():
        if (la, h) == (layer, head):
            ranks[starts[q] : starts[q] + q + 1] = row


@dataclass(frozen=True, eq=False)
class AttentionMaps:
    """[layer][head] -> causal triangle. ``scores`` may hold None where a window masks;
    ``sinks`` [layer] -> [head] sink logits (None for a model or layer without);
    ``rank_fixes`` (layer, head, query) -> that row's ranks where the scores do not give
    them. ``probs`` and ``ranks`` are derived on first access (see the module docstring).
    ``layers``: the block number of each entry, where it is not its position (a hybrid's
    attention layers among blocks without attention; ``layer_numbers``)."""

    scores: list[list[Triangle]]
    sinks: list[list[float] | None] | None = None
    rank_fixes: dict[Row, tuple[int, ...]] = field(default_factory=dict)
    stored_probs: list[list[Triangle]] | None = None  # a version-1/2 file's own probs
    layers: tuple[int, ...] | None = None  # block number of each entry; None: 0..n-1

    @property
    def layer_numbers(self) -> tuple[int, ...]:
        """The block number of each entry of ``scores`` (its position unless ``layers``)."""
        return self.layers if self.layers is not None else tuple(range(len(self.scores)))

    def _derived(self, name: str) -> list[list[Triangle]]:
        out = []
        for index, (layer, heads) in enumerate(zip(self.layer_numbers, self.scores, strict=True)):
            sinks = None if self.sinks is None else self.sinks[index]
            out.append([])
            for head, triangle in enumerate(heads):
                n = len(triangle)
                rows, keys, starts = triangle_index(n)
                scores = flat(triangle)
                if name == "probs":
                    sink = None if sinks is None else np.asarray(sinks[head], np.float64)
                    out[-1].append(unflat(row_probs(rows, starts, scores, sink), n))
                else:
                    ranks = row_ranks(rows, keys, scores)
                    _fix_rows(self.rank_fixes, layer, head, ranks, starts)
                    out[-1].append(unflat(ranks, n))
        return out

    @cached_property
    def probs(self) -> list[list[Triangle]]:
        return self.stored_probs if self.stored_probs is not None else self._derived("probs")

    @cached_property
    def ranks(self) -> list[list[Triangle]]:
        return self._derived("ranks")

    def to_json(self) -> Json:
        out: Json = {
            "scores": self.scores,
            "rank_fixes": [[*row, list(ranks)] for row, ranks in sorted(self.rank_fixes.items())],
        }
        if self.sinks is not None:
            out["sinks"] = self.sinks
        if self.layers is not None:
            out["layers"] = list(self.layers)
        return out

    @classmethod
    def from_json(cls, att: Json) -> AttentionMaps:
        """A version-3 ``attention`` object (KeyError/ValueError/TypeError if malformed)."""
        fixes = {(int(la), int(h), int(q)): tuple(int(r) for r in row) for la, h, q, row in att["rank_fixes"]}  # fmt: skip
        layers = att.get("layers")
        return cls(att["scores"], att.get("sinks"), fixes, None, layers and tuple(map(int, layers)))

    @classmethod
    def from_stored(cls, scores: list, probs: list, ranks: list) -> AttentionMaps:
        """A version-1/2 ``attention`` object: probabilities kept as written, ranks turned
        into ``rank_fixes``, sink logits recovered from the probabilities."""
        maps = cls(scores, sinks_from_probs(scores, probs), {}, probs)
        fixes = {}
        for layer, heads in enumerate(maps.ranks):
            for head, triangle in enumerate(heads):
                for query, row in enumerate(triangle):
                    if row != ranks[layer][head][query]:
                        fixes[(layer, head, query)] = tuple(ranks[layer][head][query])
        return cls(scores, maps.sinks, fixes, probs)


def rank_fixes(
    layer: int, scores: list[Triangle], ranks: np.ndarray, order: np.ndarray | None = None
) -> dict[Row, tuple[int, ...]]:
    """The rows of one layer whose ``ranks`` (head, query, key), the analysis' key order
    over unrounded scores, differ from those the written ``scores`` triangles give.
    ``order`` (head, query, key): the keys by rank (masked last), as ``KeyOrder.order``;
    None derives it from ``ranks``.

    Rounding never reverses two scores, it can only make them equal; the written scores
    give the rank order unless two keys next to each other in it round to one value while
    the later-ranked one is the lower key (a tie of the written scores goes to the lower
    key). Those rows are found along ``order``, without sorting the written scores."""
    if order is None:
        order = np.argsort(np.where(ranks < 0, ranks.shape[-1], ranks), axis=-1, kind="stable")
    fixes = {}
    for head, triangle in enumerate(scores):
        n = len(triangle)
        rows, keys, _ = triangle_index(n)
        written = np.full((n, n), np.nan)
        written[rows, keys] = flat(triangle)  # NaN where masked: never equal to anything
        along = np.take_along_axis(written, order[head][:n, :n], axis=1)
        keys_along = order[head][:n, :n]
        swapped = (along[:, 1:] == along[:, :-1]) & (keys_along[:, 1:] < keys_along[:, :-1])
        for query in np.flatnonzero(swapped.any(1)).tolist():
            fixes[(layer, head, query)] = tuple(ranks[head][query, : query + 1].tolist())
    return fixes


def _sink_logit(scores: np.ndarray, probs: np.ndarray, rows, starts) -> tuple[float, float]:
    """(largest sink share of any row, the sink logit that row gives): with the row's top
    key j, p_sink / p_j = exp(a - s_j)."""
    share = 1.0 - np.add.reduceat(probs, starts)
    row = int(np.argmax(share))
    cells = np.flatnonzero(rows == row)
    j = cells[np.nanargmax(np.where(np.isnan(scores[cells]), -np.inf, scores[cells]))]
    return float(share[row]), float(scores[j] + np.log(max(share[row], 1e-300) / probs[j]))


def sinks_from_probs(scores: list, probs: list) -> list[list[float] | None] | None:
    """Per layer, each head's sink logit recovered from stored probabilities, or None for
    a layer where no row's probabilities fall short of 1 by ``SINK_EVIDENCE``."""
    out: list[list[float] | None] = []
    for layer, heads in enumerate(scores):
        found = []
        for head, triangle in enumerate(heads):
            rows, _, starts = triangle_index(len(triangle))
            found.append(_sink_logit(flat(triangle), flat(probs[layer][head]), rows, starts))
        shown = any(share > SINK_EVIDENCE for share, _ in found)
        out.append([float(f"{a:.6g}") for _, a in found] if shown else None)
    return out if any(layer is not None for layer in out) else None
