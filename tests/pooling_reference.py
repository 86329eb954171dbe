"""A reference pooling for the tests: focus and impact pooled over a set in one pass.

The package pools through exact partial sums (``attnreport.corpus.partial``); this
independent one-pass computation is what the tests hold it against.

A pooled focus statistic is the mean of the per-sentence values weighted by the number
of queries each averaged over (``n_queries``; ``n_first`` for first-token focus, which
with a sliding window counts only the queries that can see token 0), which equals the
statistic computed over all those query tokens of the set at once; sentences with no
such query carry no weight and are left out of the spread (min, q1, median, q3, max across sentences, ``numpy.quantile``'s
default linear interpolation).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from attnreport.analyses.focus import focus_sorted
from attnreport.analyses.tables import Table, concat_tables
from attnreport.analyses.weights import query_weights
from attnreport.corpus.partial import SPREAD_COLUMNS
from attnreport.vocabulary import FOCUS_STATISTICS


def _check_aligned(per_sentence: Sequence[Table]) -> None:
    """Every per-sentence focus table must list the same (layer, head) rows in one order."""
    if not per_sentence:
        raise ValueError("pooling needs at least one sentence")
    first = per_sentence[0]
    for index, table in enumerate(per_sentence[1:], start=1):
        same_layers = np.array_equal(table["layer"], first["layer"])
        if not (same_layers and np.array_equal(table["head"], first["head"])):
            raise ValueError(f"sentence {index} has other (layer, head) rows than sentence 0")


def _spread(values: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """(5, rows) quantiles of each row's valid sentences (``numpy.quantile``); 0 if none."""
    out = np.zeros((len(SPREAD_COLUMNS), values.shape[1]))
    for row in range(values.shape[1]):
        kept = values[valid[:, row], row]
        if len(kept):
            out[:, row] = [np.quantile(kept, q) for q in (0.0, 0.25, 0.5, 0.75, 1.0)]
    return out


def _pooled_columns(per_sentence: Sequence[Table]) -> dict[str, np.ndarray]:
    """(rows, statistic) arrays for value, spread and n_sentences."""
    columns: dict[str, list[np.ndarray]] = {
        name: [] for name in ("value", *SPREAD_COLUMNS, "n_sentences")
    }
    for statistic in FOCUS_STATISTICS:
        weights = np.stack([query_weights(t, statistic) for t in per_sentence]).astype(float)
        valid = weights > 0
        total = weights.sum(0)
        columns["n_sentences"].append(valid.sum(0))
        values = np.stack([np.asarray(t[statistic], dtype=np.float64) for t in per_sentence])
        weighted = (values * weights).sum(0)
        columns["value"].append(
            np.divide(weighted, total, out=np.zeros_like(total), where=total > 0)
        )
        for name, quantile in zip(SPREAD_COLUMNS, _spread(values, valid), strict=True):
            columns[name].append(quantile)
    return {name: np.stack(parts, axis=1) for name, parts in columns.items()}


def pool_focus(per_sentence: Sequence[Table]) -> tuple[Table, Table, Table]:
    """``(focus_by_sentence, focus_pooled, focus_sorted)`` for the set.

    ``per_sentence[s]`` is sentence ``s``'s focus table (all layers, same rows for every
    sentence; ValueError otherwise or when empty). ``focus_by_sentence`` stacks them with a
    leading ``sentence`` column. ``focus_pooled`` has one row per (layer, head, statistic) in
    that order: value (weighted mean), min, q1, median, q3, max, n_sentences (sentences that
    count). ``focus_sorted`` sorts the pooled values per statistic and layer, with min and max
    carried along. With no counting sentence, value and spread are 0.0.
    """
    _check_aligned(per_sentence)
    by_sentence = concat_tables(
        [
            {"sentence": np.full(len(t["head"]), s, dtype=np.int64), **t}
            for s, t in enumerate(per_sentence)
        ]
    )
    pooled = _pooled_columns(per_sentence)
    n_stats = len(FOCUS_STATISTICS)
    first = per_sentence[0]
    focus_pooled: Table = {
        "layer": np.repeat(np.asarray(first["layer"], dtype=np.int64), n_stats),
        "head": np.repeat(np.asarray(first["head"], dtype=np.int64), n_stats),
        "statistic": np.tile(np.array(FOCUS_STATISTICS), len(first["head"])),
    }
    focus_pooled.update({name: column.reshape(-1) for name, column in pooled.items()})
    focus_pooled["n_sentences"] = focus_pooled["n_sentences"].astype(np.int64)
    return by_sentence, focus_pooled, focus_sorted(focus_pooled, extra_columns=("min", "max"))


def pool_impact(per_sentence_head_impact: Sequence[Table]) -> Table:
    """The ``impact_pooled`` table: mean magnitude and orientation over all tokens of the set.

    One row per (layer, head), sorted by layer then head; ``n_tokens`` = tokens pooled
    (every query of every sentence, query 0 included). ValueError when there is no row.
    """
    table = concat_tables(per_sentence_head_impact)
    if not table or len(table["head"]) == 0:
        raise ValueError("pooling impact needs at least one token")
    pairs = np.stack([table["layer"], table["head"]], axis=1).astype(np.int64)
    unique, inverse = np.unique(pairs, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    counts = np.bincount(inverse, minlength=len(unique))

    def mean(name: str) -> np.ndarray:
        return np.bincount(inverse, weights=table[name], minlength=len(unique)) / counts

    return {
        "layer": unique[:, 0],
        "head": unique[:, 1],
        "magnitude": mean("magnitude"),
        "orientation": mean("orientation"),
        "n_tokens": counts.astype(np.int64),
    }
