"""Near-ties: rows of the attention where two scores are within the comparison's
tolerance, so that a discrete statistic (top key, rank) may flip between two runs."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnreport import vocabulary as V
from attnreport.results.columns import Table
from attnreport.results.io import Results
from attnreport.results.maps import flat, triangle_index
from attnreport.results.rounding import SCORE_PLACES


@dataclass(frozen=True)
class Tolerance:
    """When two numbers of two runs agree: ``|a - b| <= atol + rtol * max(|a|, |b|)``."""

    rtol: float = V.RTOL
    atol: float = V.ATOL

    def close(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
        both_nan = np.isnan(a) & np.isnan(b)
        with np.errstate(invalid="ignore"):
            ok = np.abs(a - b) <= self.atol + self.rtol * np.maximum(np.abs(a), np.abs(b))
        return ok | both_nan


def map_tolerance(tol: Tolerance) -> Tolerance:
    """``tol`` for the attention maps, which the results keep at ``SCORE_PLACES`` decimals
    (schema 9): a score may round the other way in another run (one unit of the last
    place), and a probability derived from the row's scores then moves by up to twice that
    unit times itself. So at least ``atol`` 1.5 units and ``rtol`` 2 units."""
    unit = 10.0**-SCORE_PLACES
    return Tolerance(rtol=max(tol.rtol, 2 * unit), atol=max(tol.atol, 1.5 * unit))


def map_tolerance_words(tol: Tolerance) -> str:
    """How ``compare`` says which tolerance the maps were compared with."""
    maps = map_tolerance(tol)
    return (
        f"maps compared within atol {maps.atol:g}, rtol {maps.rtol:g}: their scores are "
        f"kept at {SCORE_PLACES} decimals"
    )


@dataclass(frozen=True)
class Ties:
    """Rows (sentence, layer, head, query) whose top two, or any two, scores nearly tie;
    ``known``: the sentences whose scores were read for them (those with a results file in
    either run). Another sentence's near-ties are unknown, not absent."""

    top: frozenset[tuple[int, int, int, int]]
    row: frozenset[tuple[int, int, int, int]]
    known: frozenset[int] = frozenset()

    def project(self, which: str, keep: tuple[bool, bool, bool, bool]) -> set[tuple]:
        rows = self.top if which == "top" else self.row
        return {tuple(v if k else None for v, k in zip(r, keep, strict=True)) for r in rows}


def _top_ties(s: int, top: Table, tol: Tolerance) -> set[tuple[int, int, int, int]]:
    p1, p2 = top.p_top1, top.p_top2
    near = (p1 - p2 <= tol.atol + tol.rtol * p1) & (top.query > 0)
    return {
        (s, int(la), int(h), int(q))
        for la, h, q in zip(top.layer[near], top.head[near], top.query[near], strict=True)
    }


def _row_ties(s: int, results: Results, tol: Tolerance) -> set[tuple[int, int, int, int]]:
    sentence = results.sentences[s]
    out: set[tuple[int, int, int, int]] = set()
    if sentence.attention is None:
        bd = sentence.tables.breakdown
        order = np.lexsort((bd.rank, bd.query, bd.head, bd.layer))
        same = np.diff(bd.query[order]) == 0
        near = same & tol.close(bd.score[order][:-1], bd.score[order][1:])
        for i in np.flatnonzero(near):
            r = order[i]
            out.add((s, int(bd.layer[r]), int(bd.head[r]), int(bd.query[r])))
        return out
    maps, close = sentence.attention, map_tolerance(tol).close
    for layer, heads in zip(maps.layer_numbers, maps.scores, strict=True):
        for head, triangle in enumerate(heads):
            n = len(triangle)
            rows, keys, _ = triangle_index(n)
            square = np.full((n, n), np.nan)
            square[rows, keys] = flat(triangle)
            ordered = np.sort(square, axis=1)  # each row's scores ascending, NaN (masked) last
            near = close(ordered[:, :-1], ordered[:, 1:]) & ~np.isnan(ordered[:, 1:])
            out.update((s, layer, head, query) for query in np.flatnonzero(near.any(1)).tolist())
    return out


def find_ties(a: Results, b: Results, tol: Tolerance) -> Ties:
    top: set[tuple[int, int, int, int]] = set()
    row: set[tuple[int, int, int, int]] = set()
    known: set[int] = set()
    for results in (a, b):
        for sentence in results.sentences:  # those with a results file (``results.kept``)
            top |= _top_ties(sentence.index, sentence.tables.top, tol)
            row |= _row_ties(sentence.index, results, tol)
            known.add(sentence.index)
    return Ties(frozenset(top), frozenset(row | top), frozenset(known))
