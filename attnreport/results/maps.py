"""One sentence's attention maps: the scores the results keep, and what derives from them.

A sentence file (schema version 3) keeps, per (layer, head), the causal triangle of the
scores ``s_ij`` the softmax read (after scaling and any soft-cap; ``None`` where a window
masks the key), the learned sink logit of each head for a model that has them (gpt-oss),
and the few keys whose rank the written scores do not give (``rank_fixes``: two scores
of a row equal after rounding, whose unrounded order is the other way; since schema 11
only those keys of the row, before it the whole row).
Probabilities and ranks are derived here, in numpy, when first read:

- ``probs``: softmax over the row's unmasked keys and the sink logit (if any); masked
  cells 0. With a sink, a row's probabilities over real keys sum to ``1 - sink share``.
- ``ranks``: a key's place in its row by score descending, ties to the lower key (the
  analysis' ``KeyOrder``); masked cells -1; a key in ``rank_fixes`` takes the rank given.

Version 1 and 2 files also stored ``probs`` and ``ranks``: ``from_stored`` keeps their
probabilities as written, turns their ranks into ``rank_fixes`` and recovers the sink
logits from the probabilities, so a version-3 dump of them loses nothing.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from attnreport.jsontypes import Json
from attnreport.results.rounding import SCORE_PLACES

Row = tuple[int, int, int]  # (layer, head, query)
RankFix = tuple[tuple[int, ...], tuple[int, ...]]  # (keys, their ranks) of one row
SINK_EVIDENCE = 1e-4  # a stored row whose probabilities sum below 1 - this shows a sink


class FlatTriangle(Sequence):
    """An n-row causal triangle kept as one flat array, row by row (``flat``'s order), that
    reads as the list of rows it stands for: ``tri[i]`` is the list of keys 0..i of query
    row i, NaN read as None (a masked cell), so it equals the nested lists results of
    schema 9 and older held. The analysis, the part files and the figures read
    ``values`` and never build those lists: a 256-token sentence has 8.9 M cells."""

    __slots__ = ("values", "n")

    def __init__(self, values: np.ndarray, n: int | None = None) -> None:
        values = np.asarray(values)
        rows = int((math.isqrt(8 * len(values) + 1) - 1) // 2) if n is None else n
        if values.ndim != 1 or rows * (rows + 1) // 2 != len(values):
            raise ValueError(f"{values.shape} values are no causal triangle's cells")
        self.values, self.n = values, rows

    def __len__(self) -> int:
        return self.n

    def _rows(self, items: list[Any], first: int, stop: int) -> list[list[Any]]:
        if self.values.dtype.kind == "f":
            items = [None if v != v else v for v in items]
        base = first * (first + 1) // 2
        return [items[i * (i + 1) // 2 - base : (i + 1) * (i + 2) // 2 - base] for i in range(first, stop)]  # fmt: skip

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self.n))]
        i = index + self.n if index < 0 else index
        if not 0 <= i < self.n:
            raise IndexError("triangle row out of range")
        return self._rows(self.values[i * (i + 1) // 2 : (i + 1) * (i + 2) // 2].tolist(), i, i + 1)[0]  # fmt: skip

    def __iter__(self) -> Iterator[list[Any]]:
        return iter(self.tolist())

    def tolist(self) -> list[list[Any]]:
        """The nested rows (what a results file of schema 9 wrote)."""
        return self._rows(self.values.tolist(), 0, self.n)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, FlatTriangle):
            return self.n == other.n and np.array_equal(self.values, other.values, equal_nan=True)
        return isinstance(other, list) and self.tolist() == other

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"FlatTriangle(n={self.n}, dtype={self.values.dtype})"

    def __getstate__(self) -> tuple[np.ndarray, int]:
        return self.values, self.n

    def __setstate__(self, state: tuple[np.ndarray, int]) -> None:
        self.values, self.n = state


Triangle = list[list[Any]] | FlatTriangle  # tri[i] holds keys 0..i of query row i


def triangle_index(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row, key, row start) of every cell of an n-row triangle flattened row by row."""
    rows = np.repeat(np.arange(n), np.arange(1, n + 1))
    starts = np.arange(n) * np.arange(1, n + 1) // 2
    return rows, np.arange(len(rows)) - starts[rows], starts


def flat(triangle: Triangle) -> np.ndarray:
    """A triangle as one float64 array, row by row; ``None`` (masked) becomes NaN. A
    ``FlatTriangle`` of floats gives its own array (not a copy: do not write to it)."""
    if isinstance(triangle, FlatTriangle):
        return triangle.values.astype(np.float64, copy=False)
    return np.array(list(itertools.chain.from_iterable(triangle)), dtype=np.float64)


def as_triangle_list(triangle: Triangle) -> list[list[Any]]:
    """The nested rows of a triangle, whichever form it is kept in (for JSON)."""
    return triangle.tolist() if isinstance(triangle, FlatTriangle) else triangle


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


def layer_ranks(scores: np.ndarray, n: int) -> np.ndarray:
    """``row_ranks`` of every head's flat triangle at once: (head, cell) scores -> (head,
    cell) ranks, score descending, ties to the lower key, NaN (masked) cells -1."""
    rows, keys, _ = triangle_index(n)
    masked = np.isnan(scores)
    codes = _score_codes(scores, masked) if n <= MAX_KEYS else None
    if codes is None:  # scores that are not whole thousandths: one float sort
        square = np.full((len(scores), n, n), np.inf)  # above the diagonal: after every key
        square[:, rows, keys] = np.where(masked, np.inf, -scores)  # masked: last too
        order = np.argsort(square, axis=-1, kind="stable")  # equal scores keep key order
    else:
        order = _sorted_keys(codes, masked, rows, keys, n)
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.arange(n), axis=-1)
    return np.where(masked, -1, ranks[:, rows, keys])


# A sort key is (2 x CODE_LIMIT at most: 42 bits) above a key index (21 bits) in an int64.
CODE_LIMIT = 2**40  # |score| x 10**SCORE_PLACES below this
MAX_KEYS = 2**21


def _score_codes(scores: np.ndarray, masked: np.ndarray) -> np.ndarray | None:
    """Each score as the whole number of 10**-SCORE_PLACES it is (masked: 0), when every
    score is exactly such a number (``rounded_array``'s output, as the results keep
    them) and small enough for ``_sorted_keys``; else None. The codes then order the cells
    as their scores do, ties included."""
    scale = float(10**SCORE_PLACES)
    with np.errstate(invalid="ignore"):
        codes = np.rint(np.where(masked, 0.0, scores) * scale)
        exact = bool(np.all((codes / scale == scores) | masked))
    if not exact or np.abs(codes).max(initial=0.0) >= CODE_LIMIT:
        return None
    return codes.astype(np.int64)


def _sorted_keys(
    codes: np.ndarray, masked: np.ndarray, rows: np.ndarray, keys: np.ndarray, n: int
) -> np.ndarray:
    """(head, row, rank) -> key of the triangles whose cells have integer ``codes``: code
    descending, ties to the lower key, ``masked`` cells and keys past the row last."""
    last = 2 * CODE_LIMIT  # after every unmasked cell
    primary = np.full((len(codes), n, n), last, dtype=np.int64)
    primary[:, rows, keys] = np.where(masked, last, CODE_LIMIT - codes)
    return ascending_keys(primary)


def ascending_keys(primary: np.ndarray) -> np.ndarray:
    """Each row's key indices (last axis) by ``primary``, non-negative integers, ascending,
    ties to the lower key: a stable argsort. Each cell is made one unique int64, its
    ``primary`` above its key index, so one plain sort of integers, several times faster
    than a stable sort, gives the stable order. ``primary`` must leave room for the key
    index: below 2**(63 - bits of the key count) (ValueError otherwise)."""
    n = primary.shape[-1]
    shift = max(1, (n - 1).bit_length())
    keyed = primary.astype(np.int64)
    if keyed.size and (keyed.min() < 0 or int(keyed.max()) >> (63 - shift)):
        raise ValueError(f"sort keys of {n} keys need primaries in [0, 2**{63 - shift})")
    keyed <<= np.int64(shift)
    keyed |= np.arange(n, dtype=np.int64)
    keyed.sort(axis=-1)
    return keyed & np.int64((1 << shift) - 1)


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


def _fixes_by_head(fixes: dict[Row, RankFix]) -> dict[tuple[int, int], list]:
    """``rank_fixes`` grouped by (layer, head): [(query, (keys, ranks)), ...]."""
    out: dict[tuple[int, int], list] = {}
    for (layer, head, query), fix in fixes.items():
        out.setdefault((layer, head), []).append((query, fix))
    return out


def _fix_rows(fixes: list, ranks: np.ndarray, starts: np.ndarray) -> None:
    for query, (keys, fixed) in fixes:
        ranks[starts[query] + np.asarray(keys, dtype=np.int64)] = fixed


def _sparse_fix(derived: np.ndarray, true: np.ndarray) -> RankFix | None:
    """The keys of a row whose ``true`` ranks differ from the ``derived`` ones, with those
    ranks; None when none does."""
    keys = np.flatnonzero(derived != true)
    return (tuple(keys.tolist()), tuple(true[keys].tolist())) if len(keys) else None


def _written_row_ranks(row: Sequence[Any]) -> np.ndarray:
    """The ranks one written row of scores gives (``row_ranks`` of that one row)."""
    values = np.array([np.nan if v is None else v for v in row], dtype=np.float64)
    return row_ranks(np.zeros(len(values), dtype=np.int64), np.arange(len(values)), values)


@dataclass(frozen=True, eq=False)
class AttentionMaps:
    """[layer][head] -> causal triangle. ``scores`` may hold None where a window masks;
    ``sinks`` [layer] -> [head] sink logits (None for a model or layer without);
    ``rank_fixes`` (layer, head, query) -> (keys, ranks) of the keys of that row whose
    rank the scores do not give. ``probs`` and ``ranks`` are derived on first access (see
    the module docstring). ``layers``: the block number of each entry, where it is not its position (a hybrid's
    attention layers among blocks without attention; ``layer_numbers``)."""

    scores: list[list[Triangle]]
    sinks: list[list[float] | None] | None = None
    rank_fixes: dict[Row, RankFix] = field(default_factory=dict)
    stored_probs: list[list[Triangle]] | None = None  # a version-1/2 file's own probs
    layers: tuple[int, ...] | None = None  # block number of each entry; None: 0..n-1

    @property
    def layer_numbers(self) -> tuple[int, ...]:
        """The block number of each entry of ``scores`` (its position unless ``layers``)."""
        return self.layers if self.layers is not None else tuple(range(len(self.scores)))

    def _derived(self, name: str) -> list[list[Triangle]]:
        fixes = _fixes_by_head(self.rank_fixes) if name == "ranks" else {}
        out = []
        for index, (layer, heads) in enumerate(zip(self.layer_numbers, self.scores, strict=True)):
            sinks = None if self.sinks is None else self.sinks[index]
            if not heads:
                out.append([])
                continue
            n = len(heads[0])
            rows, keys, starts = triangle_index(n)
            scores = np.stack([flat(triangle) for triangle in heads])  # (head, cell)
            if name == "probs":
                out.append([])
                for head, values in enumerate(scores):
                    sink = None if sinks is None else np.asarray(sinks[head], np.float64)
                    out[-1].append(FlatTriangle(row_probs(rows, starts, values, sink), n))
            else:
                ranks = layer_ranks(scores, n)
                for head, values in enumerate(ranks):
                    _fix_rows(fixes.get((layer, head), []), values, starts)
                out.append([FlatTriangle(values, n) for values in ranks])
        return out

    @cached_property
    def probs(self) -> list[list[Triangle]]:
        return self.stored_probs if self.stored_probs is not None else self._derived("probs")

    @cached_property
    def ranks(self) -> list[list[Triangle]]:
        return self._derived("ranks")

    def to_json(self, scores: bool = True) -> Json:
        """The JSON of the maps; without ``scores`` all but those (a part file holds them)."""
        out: Json = {}
        if scores:
            out["scores"] = [[as_triangle_list(t) for t in heads] for heads in self.scores]
        fixes = sorted(self.rank_fixes.items())
        out["rank_fixes"] = [[*row, list(k), list(r)] for row, (k, r) in fixes]
        if self.sinks is not None:
            out["sinks"] = self.sinks
        if self.layers is not None:
            out["layers"] = list(self.layers)
        return out

    @classmethod
    def from_json(cls, att: Json) -> AttentionMaps:
        """An ``attention`` object of version 3 or later (KeyError/ValueError/TypeError if
        malformed). A fix of schema 10 or older holds its row's every rank: only the keys
        whose rank the written scores do not give are kept."""
        given = att.get("layers")
        layers = tuple(map(int, given)) if given else None
        numbers = layers or tuple(range(len(att["scores"])))
        fixes: dict[Row, RankFix] = {}
        for la, h, q, *fix in att["rank_fixes"]:
            row = (int(la), int(h), int(q))
            if len(fix) == 2:  # schema 11: [keys, ranks]
                fixes[row] = (tuple(int(k) for k in fix[0]), tuple(int(r) for r in fix[1]))
                continue
            (ranks,) = fix  # the whole row
            written = att["scores"][numbers.index(row[0])][row[1]][row[2]]
            found = _sparse_fix(_written_row_ranks(written), np.asarray(ranks, dtype=np.int64))
            if found is not None:
                fixes[row] = found
        return cls(att["scores"], att.get("sinks"), fixes, None, layers)

    @classmethod
    def from_stored(cls, scores: list, probs: list, ranks: list) -> AttentionMaps:
        """A version-1/2 ``attention`` object: probabilities kept as written, ranks turned
        into ``rank_fixes``, sink logits recovered from the probabilities."""
        maps = cls(scores, sinks_from_probs(scores, probs), {}, probs)
        fixes = {}
        for layer, heads in enumerate(maps.ranks):
            for head, triangle in enumerate(heads):
                for query, row in enumerate(triangle):
                    stored = np.asarray(ranks[layer][head][query], dtype=np.int64)
                    found = _sparse_fix(np.asarray(row, dtype=np.int64), stored)
                    if found is not None:
                        fixes[(layer, head, query)] = found
        return cls(scores, maps.sinks, fixes, probs)


def rank_fixes(
    layer: int, scores: list[Triangle], ranks: np.ndarray, order: np.ndarray | None = None
) -> dict[Row, RankFix]:
    """The keys of one layer whose ``ranks`` (head, query, key), the analysis' key order
    over unrounded scores, differ from those the written ``scores`` triangles give, by row:
    (layer, head, query) -> (keys, their ranks). ``order`` (head, query, key): the keys
    by rank (masked last), as ``KeyOrder.order``; None derives it from ``ranks``.

    Rounding never reverses two scores, it can only make them equal; the written scores
    give the rank order unless two keys next to each other in it round to one value while
    the later-ranked one is the lower key (a tie of the written scores goes to the lower
    key). Those rows are found along ``order``; only they are ranked again from the
    written scores, and only their keys whose rank then differs are kept."""
    if order is None:
        order = np.argsort(np.where(ranks < 0, ranks.shape[-1], ranks), axis=-1, kind="stable")
    if not len(scores):
        return {}
    n = len(scores[0])
    rows, keys, _ = triangle_index(n)
    written = np.full((len(scores), n, n), np.nan)  # NaN where masked: never equal to anything
    written[:, rows, keys] = np.stack([flat(triangle) for triangle in scores])
    keys_along = order[:, :n, :n]
    cell = keys_along + (np.arange(len(scores) * n) * n).reshape(len(scores), n, 1)
    along = written.reshape(-1)[cell]  # take_along_axis(written, keys_along, 2), 3x faster
    swapped = (along[..., 1:] == along[..., :-1]) & (keys_along[..., 1:] < keys_along[..., :-1])
    heads, queries = np.nonzero(swapped.any(-1))
    if not len(heads):
        return {}
    # The written scores' order is the true one with each run of equal written values put
    # in key order: sorting (run, key) codes, already sorted but inside those runs, is
    # about linear (timsort), where sorting the written scores again is not.
    along, keys_along = along[heads, queries], keys_along[heads, queries]  # (row, rank)
    run = np.cumsum(np.c_[np.ones(len(heads), bool), along[:, 1:] != along[:, :-1]], axis=1)
    perm = np.argsort(run * n + keys_along, axis=-1, kind="stable")
    derived = np.empty_like(keys_along)
    np.put_along_axis(derived, np.take_along_axis(keys_along, perm, axis=-1), np.arange(n), axis=-1)
    true = ranks[heads, queries, :n]
    at, key = np.nonzero((derived != true) & (true >= 0))
    return fixes_by_row(layer, heads, queries, at, key, true[at, key])


def fixes_by_row(
    layer: int,
    heads: np.ndarray,
    queries: np.ndarray,
    at: np.ndarray,
    keys: np.ndarray,
    ranks: np.ndarray,
) -> dict[Row, RankFix]:
    """``rank_fixes`` of one layer from fixed keys listed row by row: ``keys`` and their
    ``ranks``, each of row ``at`` (ascending; in a row, by key), row i being (``heads[i]``,
    ``queries[i]``). A row with no key listed gets no fix."""
    bounds = np.searchsorted(at, np.arange(len(heads) + 1)).tolist()
    key_list, rank_list = keys.tolist(), ranks.tolist()
    fixes: dict[Row, RankFix] = {}
    for index, (head, query) in enumerate(zip(heads.tolist(), queries.tolist(), strict=True)):
        lo, hi = bounds[index], bounds[index + 1]
        if hi > lo:
            fixes[(layer, head, query)] = (tuple(key_list[lo:hi]), tuple(rank_list[lo:hi]))
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
