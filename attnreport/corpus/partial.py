"""Set-wide statistics merged from per-sentence partial sums, exactly.

A sentence contributes a ``SentencePartial``: its focus row per (layer, head) (three
statistics and ``n_queries``) and, per (layer, head), the sum of its tokens' impact
``magnitude`` and ``orientation`` with the token count. A ``SetPartial`` holds

- the running totals: for each focus statistic, the sum over sentences of
  ``value * weight`` and the sum of the weights (``n_queries``, or ``n_first`` for
  first-token focus: ``analyses.weights.query_weights``; the weights are summed from the
  sentences' rows, below); for impact, the sums and counts;
- each sentence's focus row (layers x heads x 9 numbers: ``BY_SENTENCE``,
  ``n_queries`` and ``n_first``), because quantiles across
  sentences and the ``focus_by_sentence`` table need them. That is all that grows with
  the corpus; the attention maps and tables of a sentence are never kept.

Totals are kept as exact integers (every float64 is an integer multiple of 2**-1074),
so addition is associative and commutative: any split of a corpus, merged in any order,
gives bit-identical totals, and the pooled values are the exact totals rounded once.
Pooled value = total weighted sum / total weight: counts and sums, never averages of
averages (``docs/results-schema.md``, ``set.json``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from attnreport.analyses.exact import exact, to_float
from attnreport.analyses.focus import focus_sorted
from attnreport.analyses.role_pooling import RoleTotals
from attnreport.analyses.split_updates import SPLIT_COLUMNS
from attnreport.analyses.tables import Table
from attnreport.analyses.weights import FIRST_TOKEN_MEASURES, query_weights
from attnreport.corpus.pooled import PoolTotals
from attnreport.jsontypes import Json
from attnreport.results import SetResults
from attnreport.results.types import pooled_kinds, set_results_from
from attnreport.vocabulary import FOCUS_STATISTICS

SPREAD_COLUMNS: tuple[str, ...] = ("min", "q1", "median", "q3", "max")  # across sentences
_QUANTILES = (0.0, 0.25, 0.5, 0.75, 1.0)
# the per-sentence focus columns ``focus_by_sentence`` lists (besides layer, head, n_queries);
# the pooled statistics are the first ``len(FOCUS_STATISTICS)`` of them
BY_SENTENCE: tuple[str, ...] = (*FOCUS_STATISTICS, "first_prob", "sink_share", *SPLIT_COLUMNS)


@dataclass(frozen=True)
class SentencePartial:
    """What one sentence adds to the set-wide tables (small: layers x heads rows).

    ``focus``: the sentence's focus table (layer, head, self_focus, first_focus,
    concentration, n_queries), rows in (layer, head) order. ``impact``: per (layer, head),
    ``magnitude`` and ``orientation`` summed over the sentence's tokens, and ``n_tokens``.
    """

    index: int
    focus: Table
    impact: Table
    roles: Table | None = None  # the sentence's head_roles table (None: written before them)
    massive: Table | None = None  # its massive_activations table
    # set table name -> the sentence table a ``PooledTable`` pools (``pooled.pooled_sources``)
    pooled: dict[str, Table] = field(default_factory=dict)
    # its value norms per (layer, kv head) (``value_norms.COLUMNS``), collected in its
    # analysis pass; None: written before they were (the set makes a pass for them)
    values: Table | None = None

    @classmethod
    def of(
        cls,
        index: int,
        focus: Table,
        head_impact: Table,
        roles: Table | None = None,
        massive: Table | None = None,
        pooled: dict[str, Table] | None = None,
        values: Table | None = None,
    ) -> SentencePartial:
        """From a sentence's ``focus``, ``head_impact`` (and head-role) tables and the
        sources of the generically pooled set tables."""
        pairs = np.stack([head_impact["layer"], head_impact["head"]], axis=1).astype(np.int64)
        unique, inverse = np.unique(pairs, axis=0, return_inverse=True)
        inverse = inverse.reshape(-1)

        def total(name: str) -> np.ndarray:
            return np.bincount(inverse, weights=head_impact[name], minlength=len(unique))

        impact = {
            "layer": unique[:, 0],
            "head": unique[:, 1],
            "magnitude": total("magnitude"),
            "orientation": total("orientation"),
            "n_tokens": np.bincount(inverse, minlength=len(unique)).astype(np.int64),
        }
        focus = {k: np.asarray(v) for k, v in focus.items()}
        sources = {name: _arrays(table) for name, table in (pooled or {}).items()}
        return cls(index, focus, impact, _arrays(roles), _arrays(massive), sources, _arrays(values))  # type: ignore[arg-type]

    def to_json(self) -> Json:
        """Full-precision JSON (floats round-trip exactly), so a resumed run loses nothing."""
        out: Json = {"index": self.index}
        for name in ("focus", "impact", "roles", "massive", "values"):
            value = getattr(self, name)
            if value is not None:
                out[name] = {k: np.asarray(v).tolist() for k, v in value.items()}
        if self.pooled:
            out["pooled"] = {
                name: {k: np.asarray(v).tolist() for k, v in table.items()}
                for name, table in self.pooled.items()
            }
        return out

    @classmethod
    def from_json(cls, value: Json) -> SentencePartial:
        tables = {
            name: _arrays(value.get(name))
            for name in ("focus", "impact", "roles", "massive", "values")
        }
        pooled = {name: _arrays(table) for name, table in value.get("pooled", {}).items()}
        return cls(int(value["index"]), **tables, pooled=pooled)  # type: ignore[arg-type]


def _arrays(columns: Any) -> Table | None:
    return None if columns is None else {k: np.asarray(v) for k, v in columns.items()}


@dataclass
class SetPartial:
    """Running set-wide totals; ``add`` a sentence or ``merge`` another part, in any order."""

    rows: dict[int, np.ndarray] = field(default_factory=dict)  # index -> (9, rows) focus values
    keys: tuple[np.ndarray, np.ndarray] | None = None  # focus (layer, head) columns
    impact_keys: tuple[np.ndarray, np.ndarray] | None = None
    focus_sums: list[list[int]] = field(default_factory=list)  # [statistic][row], exact
    impact_sums: list[list[int]] = field(default_factory=list)  # [magnitude|orientation][row]
    tokens: list[int] = field(default_factory=list)  # per impact row: tokens pooled
    roles: RoleTotals = field(default_factory=RoleTotals)  # head roles of the sentences with them
    pooled: dict[str, PoolTotals] = field(default_factory=dict)  # set table name -> totals
    values: dict[int, Table] = field(default_factory=dict)  # index -> its value norms

    def __len__(self) -> int:
        return len(self.rows)

    def add(self, part: SentencePartial) -> None:
        """Count one sentence; a sentence already counted is a ValueError (never twice)."""
        one = SetPartial()
        focus, impact = part.focus, part.impact
        n = np.asarray(focus["n_queries"], dtype=np.int64)
        weights = {s: query_weights(focus, s) for s in FOCUS_STATISTICS}
        zeros = np.zeros(len(n), dtype=np.float64)  # a column the model did not produce
        unknown = np.full(len(n), -1.0)  # split update sizes a partial written before 9 lacks
        one.rows[part.index] = np.stack(
            [
                np.asarray(focus.get(s, unknown if s in SPLIT_COLUMNS else zeros), np.float64)
                for s in BY_SENTENCE
            ]
            + [n, query_weights(focus, "first_focus")]
        )
        one.keys = (np.asarray(focus["layer"]), np.asarray(focus["head"]))
        one.impact_keys = (np.asarray(impact["layer"]), np.asarray(impact["head"]))
        one.focus_sums = [
            exact(np.asarray(focus[s], dtype=np.float64) * weights[s]) for s in FOCUS_STATISTICS
        ]
        one.impact_sums = [exact(impact["magnitude"]), exact(impact["orientation"])]
        one.tokens = np.asarray(impact["n_tokens"], dtype=np.int64).tolist()
        if part.values is not None:
            one.values[part.index] = part.values
        if part.roles is not None and part.massive is not None:
            one.roles.add(part.index, part.roles, part.massive)
        kinds = pooled_kinds()
        one.pooled = {
            name: PoolTotals.of(kinds[name], source)
            for name, source in part.pooled.items()
            if name in kinds
        }
        self.merge(one)

    def merge(self, other: SetPartial) -> None:
        """Add ``other``'s sentences and totals to this one (they must not overlap)."""
        if not other.rows:
            return
        twice = self.rows.keys() & other.rows.keys()
        if twice:
            raise ValueError(f"sentence {min(twice)} is counted twice")
        self.roles.merge(other.roles)
        self.values.update(other.values)
        for name, totals in other.pooled.items():
            self.pooled.setdefault(name, PoolTotals()).merge(totals)
        if not self.rows:
            self.keys, self.impact_keys = other.keys, other.impact_keys
            self.focus_sums = [list(s) for s in other.focus_sums]
            self.tokens = list(other.tokens)
            self.impact_sums = [list(s) for s in other.impact_sums]
            self.rows.update(other.rows)
            return
        _check_same(self.keys, other.keys, "focus")
        _check_same(self.impact_keys, other.impact_keys, "impact")
        self.rows.update(other.rows)
        self.focus_sums = [
            _add(a, b) for a, b in zip(self.focus_sums, other.focus_sums, strict=True)
        ]
        self.impact_sums = [
            _add(a, b) for a, b in zip(self.impact_sums, other.impact_sums, strict=True)
        ]
        self.tokens = _add(self.tokens, other.tokens)

    def tables(self) -> dict[str, Table]:
        """The four ``set.json`` tables of the sentences counted so far."""
        if not self.rows or self.keys is None or self.impact_keys is None:
            raise ValueError("pooling needs at least one sentence")
        order = sorted(self.rows)
        stack = np.stack([self.rows[i] for i in order])  # (sentence, 9, rows)
        layer, head = self.keys
        by_sentence: Table = {
            "sentence": np.repeat(np.asarray(order, dtype=np.int64), len(head)),
            "layer": np.tile(layer, len(order)),
            "head": np.tile(head, len(order)),
        }
        for k, name in enumerate(BY_SENTENCE):
            by_sentence[name] = stack[:, k, :].reshape(-1)
        by_sentence["n_queries"] = stack[:, -2, :].reshape(-1).astype(np.int64)
        by_sentence["n_first"] = stack[:, -1, :].reshape(-1).astype(np.int64)
        pooled = self._pooled(stack)
        impact_layer, impact_head = self.impact_keys
        impact: Table = {
            "layer": impact_layer,
            "head": impact_head,
            "magnitude": np.array(
                [to_float(s, n) for s, n in zip(self.impact_sums[0], self.tokens, strict=True)]
            ),
            "orientation": np.array(
                [to_float(s, n) for s, n in zip(self.impact_sums[1], self.tokens, strict=True)]
            ),
            "n_tokens": np.asarray(self.tokens, dtype=np.int64),
        }
        return {
            "focus_by_sentence": by_sentence,
            "focus_pooled": pooled,
            "focus_sorted": focus_sorted(pooled, extra_columns=("min", "max")),
            "impact_pooled": impact,
        }

    def set_results(self) -> SetResults:
        """``tables()`` and the generically pooled tables (``PooledTable``) as the typed
        ``set.json`` (``attnreport.results.SetResults``)."""
        kinds = pooled_kinds()
        pooled = {name: totals.table(kinds[name]) for name, totals in self.pooled.items()}
        return set_results_from({**self.tables(), **pooled})

    def value_norms(self) -> dict[int, Table] | None:
        """Each counted sentence's value norms, or None when any sentence came without them
        (a run resumed from partials written before they were collected)."""
        return dict(self.values) if self.rows.keys() <= self.values.keys() else None

    def has_roles(self) -> bool:
        """Whether every counted sentence brought its head roles (a run resumed from
        partials written before them has none for those sentences)."""
        return len(self.roles.roles) == len(self.rows) > 0

    def _pooled(self, stack: np.ndarray) -> Table:
        """``focus_pooled``: one row per (layer, head, statistic); value from the exact totals."""
        layer, head = self.keys  # type: ignore[misc]
        n_stats = len(FOCUS_STATISTICS)
        # [statistic] (sentence, rows): the queries each sentence's value averages over
        counts = [
            stack[:, -1 if s in FIRST_TOKEN_MEASURES else -2, :].astype(np.int64)
            for s in FOCUS_STATISTICS
        ]
        valid = [c > 0 for c in counts]  # the sentences that statistic counts
        weights = [c.sum(0).tolist() for c in counts]  # exact integer totals per row
        value = np.array(
            [
                [to_float(s[r], w[r]) for s, w in zip(self.focus_sums, weights, strict=True)]
                for r in range(len(head))
            ]
        )  # (rows, statistic)
        spreads = [_spread(stack[:, k, :], valid[k]) for k in range(n_stats)]  # [stat](5, rows)
        table: Table = {
            "layer": np.repeat(np.asarray(layer, dtype=np.int64), n_stats),
            "head": np.repeat(np.asarray(head, dtype=np.int64), n_stats),
            "statistic": np.tile(np.array(FOCUS_STATISTICS), len(head)),
            "value": value.reshape(-1),
        }
        for q, name in enumerate(SPREAD_COLUMNS):
            table[name] = np.stack([s[q] for s in spreads], axis=1).reshape(-1)
        table["n_sentences"] = np.stack([v.sum(0) for v in valid], axis=1).reshape(-1)
        return table


def _spread(values: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """(5, rows) quantiles over valid sentences (``numpy.quantile``'s linear rule); 0 if none."""
    masked = np.where(valid, values, np.nan)
    masked[:, ~valid.any(0)] = 0.0
    return np.nanquantile(masked, _QUANTILES, axis=0)


def _add(a: list[int], b: list[int]) -> list[int]:
    return [x + y for x, y in zip(a, b, strict=True)]


def _check_same(a: Any, b: Any, what: str) -> None:
    if a is None or b is None or not all(np.array_equal(x, y) for x, y in zip(a, b, strict=True)):
        raise ValueError(f"sentences disagree on their (layer, head) {what} rows")
