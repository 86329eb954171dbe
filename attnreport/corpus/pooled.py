"""The set tables pooled from a sentence table by their declaration alone
(``results.tables.PooledTable``): exact running totals, merged in any order.

A sentence hands its source tables (``pooled_sources``); ``PoolTotals`` keeps, per key
(the ``KEYS`` values of a row), the rows counted and each mean column's sum as exact
integers (``analyses.exact``), so any split of the corpus, merged in any order, gives
bit-identical totals and the pooled means are the exact totals rounded once.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from attnreport.analyses.exact import exact, to_float
from attnreport.analyses.tables import Table
from attnreport.results import SentenceTables
from attnreport.results import tables as rt
from attnreport.results.types import pooled_kinds

Key = tuple[int | str, ...]  # one row's KEYS values


def pooled_sources(tables: SentenceTables) -> dict[str, Table]:
    """Set table name -> the columns of the sentence table it pools (those the sentence has)."""
    sources = {name: getattr(tables, kind.POOLS, None) for name, kind in pooled_kinds().items()}
    return {name: source.arrays() for name, source in sources.items() if source is not None}


@dataclass
class PoolTotals:
    """One pooled table's totals: key -> [rows counted, exact sum of each mean column]."""

    rows: dict[Key, list[int]] = field(default_factory=dict)

    @classmethod
    def of(cls, kind: type[rt.PooledTable], source: Table) -> PoolTotals:
        """The totals of one sentence's ``source`` table (rows of a key add up)."""
        totals = cls()
        keys = zip(*(np.asarray(source[k]).tolist() for k in kind.KEYS), strict=True)
        sums = [exact(np.asarray(source[name], dtype=np.float64)) for name in kind.means_of()]
        for r, key in enumerate(keys):
            row = totals.rows.setdefault(key, [0] * (1 + len(sums)))
            row[0] += 1
            for c, column in enumerate(sums, start=1):
                row[c] += column[r]
        return totals

    def merge(self, other: PoolTotals) -> None:
        """Add ``other``'s rows to these totals."""
        for key, row in other.rows.items():
            mine = self.rows.get(key, [0] * len(row))
            self.rows[key] = [a + b for a, b in zip(mine, row, strict=True)]

    def table(self, kind: type[rt.PooledTable]) -> Table:
        """The pooled table's columns: keys in sorted order, each mean, ``n_rows``."""
        keys = sorted(self.rows)
        out = {k: np.array([key[i] for key in keys]) for i, k in enumerate(kind.KEYS)}
        for c, name in enumerate(kind.means_of(), start=1):
            out[name] = np.array([to_float(self.rows[key][c], self.rows[key][0]) for key in keys])
        out["n_rows"] = np.array([self.rows[key][0] for key in keys], dtype=np.int64)
        return out
