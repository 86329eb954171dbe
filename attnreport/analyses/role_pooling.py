"""Head-role scores and massive activations pooled over a set, exactly and in any split.

``RoleTotals`` keeps each sentence's ``head_roles`` rows (layers x heads x 12 numbers) and
``massive_activations`` rows (one per layer); the set tables are computed from them when
asked, with the sums taken as exact integers (``analyses.exact``), so the one-pass study
and a corpus merged from parts in any order give bit-identical tables.

Pooled score = sum over sentences of ``score * weight`` / sum of the weights, i.e. the
score over every counted query of the set at once: weight ``n_queries`` for
entropy, entropy_normalised and distance, ``n_previous`` (queries i >= 2) for
previous_token, ``n_first`` for value_first_share and ``duplicate_weight`` (the repeating
rows' attention mass) for duplicate_token; the set's ``n_previous`` and ``n_duplicate``
are the sentences' counts summed. The set's massive activation of a layer is the sentence row with the
largest ``|value|`` (6 significant digits; ties to the lower sentence index).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from attnreport.analyses.exact import exact, ratio
from attnreport.analyses.roles import ROLE_SCORES, WEIGHT_COLUMNS
from attnreport.analyses.tables import Table, concat_tables, round_sig

WEIGHT_OF: dict[str, str] = {
    "previous_token": "n_previous",
    "duplicate_token": "duplicate_weight",
    "entropy": "n_queries",
    "entropy_normalised": "n_queries",
    "distance": "n_queries",
    "value_first_share": "n_first",
}
# the set's head_roles columns, in order; the probe's two come from ``probes.probe_table``
SET_COLUMNS: tuple[str, ...] = (
    "layer",
    "head",
    "previous_token",
    "previous_token_probe",
    "duplicate_token",
    "induction",
    "entropy",
    "entropy_normalised",
    "distance",
    "value_first_share",
    "n_previous",
    "n_duplicate",
)
COUNTED = ("n_previous", "n_duplicate")  # summed over the sentences into the set's table


@dataclass
class RoleTotals:
    """Every counted sentence's role rows; ``add`` sentences or ``merge`` parts in any order."""

    roles: dict[int, Table] = field(default_factory=dict)  # sentence -> its head_roles
    massive: dict[int, Table] = field(default_factory=dict)  # sentence -> its massive rows

    def add(self, index: int, roles: Table, massive: Table) -> None:
        """Count sentence ``index``; counting one twice is a ValueError."""
        self.merge(RoleTotals({index: dict(roles)}, {index: dict(massive)}))

    def merge(self, other: RoleTotals) -> None:
        twice = self.roles.keys() & other.roles.keys()
        if twice:
            raise ValueError(f"sentence {min(twice)} is counted twice")
        self.roles.update(other.roles)
        self.massive.update(other.massive)

    def tables(self, probe: Table) -> dict[str, Table]:
        """``head_roles``, ``head_roles_by_sentence``, ``massive_activations`` and
        ``massive_by_sentence`` of the set.

        ``probe``: ``probes.probe_table`` (layer, head, induction, previous_token_probe) in
        the same (layer, head) order as the sentences' rows. ValueError without a sentence
        or when sentences disagree on their rows.
        """
        if not self.roles:
            raise ValueError("pooling head roles needs at least one sentence")
        order = sorted(self.roles)
        rows = [self.roles[i] for i in order]
        layer, head = (np.asarray(rows[0][c], dtype=np.int64) for c in ("layer", "head"))
        for table in [*rows[1:], probe]:
            if not (np.array_equal(table["layer"], layer) and np.array_equal(table["head"], head)):
                raise ValueError("sentences disagree on their (layer, head) role rows")
        pooled: Table = {"layer": layer, "head": head}
        for name in ROLE_SCORES:
            pooled[name] = _pool(rows, name, WEIGHT_OF[name])
        pooled["induction"] = np.asarray(probe["induction"], dtype=np.float64)
        pooled["previous_token_probe"] = np.asarray(probe["previous_token_probe"], np.float64)
        for name in COUNTED:
            pooled[name] = np.sum([np.asarray(t[name], dtype=np.int64) for t in rows], axis=0)
        by_sentence = concat_tables(
            [{"sentence": np.full(len(head), i, dtype=np.int64), **self.roles[i]} for i in order]
        )
        columns = ("sentence", "layer", "head", *ROLE_SCORES, *WEIGHT_COLUMNS)
        return {
            "head_roles": {name: pooled[name] for name in SET_COLUMNS},
            "head_roles_by_sentence": {name: by_sentence[name] for name in columns},
            "massive_activations": self._massive(order),
            "massive_by_sentence": self._massive_rows(order),
        }

    def _massive_rows(self, order: list[int]) -> Table:
        """Every sentence's massive rows, sentences in ``order``, with their sentence."""
        names = ("layer", "sentence", "position", "dimension", "value", "median", "ratio")
        stacked = concat_tables(
            [
                {"sentence": np.full(len(self.massive[i]["layer"]), i), **self.massive[i]}
                for i in order
            ]
        )
        return {name: np.asarray(stacked[name]) for name in names}

    def _massive(self, order: list[int]) -> Table:
        """Per layer, the sentence row with the largest 6-digit ``|value|``."""
        stacked = self._massive_rows(order)
        layer = np.asarray(stacked["layer"], dtype=np.int64)
        magnitude = round_sig(np.abs(np.asarray(stacked["value"], dtype=np.float64)))
        sentence = np.asarray(stacked["sentence"], dtype=np.int64)
        rows = np.lexsort((sentence, -magnitude, layer))  # per layer: largest, then lowest sentence
        first = np.ones(len(rows), dtype=bool)
        first[1:] = layer[rows][1:] != layer[rows][:-1]
        picked = rows[first]
        names = ("layer", "sentence", "position", "dimension", "value", "median", "ratio")
        return {name: np.asarray(stacked[name])[picked] for name in names}


def _pool(rows: list[Table], score: str, weight: str) -> np.ndarray:
    """(row,) pooled ``score``: exact sum of score * weight over exact sum of weights."""
    values = np.stack([np.asarray(t[score], dtype=np.float64) for t in rows])  # (sentence, row)
    weights = np.stack([np.asarray(t[weight], dtype=np.float64) for t in rows])
    totals = [sum(column) for column in zip(*[exact(v) for v in values * weights], strict=True)]
    divisors = [sum(column) for column in zip(*[exact(w) for w in weights], strict=True)]
    return np.array([ratio(t, d) for t, d in zip(totals, divisors, strict=True)])
