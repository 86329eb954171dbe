"""Typed tables of the head-role scores and massive activations (schema version 5; the
previous-token score skips query 1 and carries its count since version 9).

Definitions in ``docs/results-schema.md`` (``head_roles``, ``massive_activations``) and in
``attnreport.analyses.roles`` and ``attnreport.analyses.probes``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from attnreport.results.columns import Float, Int, Table, _table, optional_col
from attnreport.results.tables import HeadColumns, SentenceColumn


@dataclass(frozen=True, eq=False)
class _HeadRolesColumns(HeadColumns):
    """One sentence's head-role scores (``analyses.roles``), one row per (layer, head): the
    columns of ``head_roles`` and, after its ``sentence`` column, of ``head_roles_by_sentence``."""

    previous_token: Float
    duplicate_token: Float
    entropy: Float  # nats
    entropy_normalised: Float
    distance: Float  # tokens
    value_first_share: Float
    n_queries: Int
    n_first: Int
    n_duplicate: Int
    duplicate_weight: Float
    # queries i >= 2, previous_token's count (version 9); -1: an older folder, whose
    # previous_token is the mean over i >= 1, query 1 (whose previous token is the first) too
    n_previous: Int = optional_col(-1)


@_table("head_roles")
class HeadRolesTable(_HeadRolesColumns):
    """One sentence's head-role scores (``analyses.roles``), one row per (layer, head)."""


@_table("head_roles_by_sentence")
class HeadRolesBySentenceTable(_HeadRolesColumns, SentenceColumn):
    """Every sentence's ``head_roles`` rows, with the sentence's index first."""


@_table("head_roles")
class HeadRolesSetTable(HeadColumns):
    """The set's head-role scores: sentence scores pooled, probe scores on the probes."""

    previous_token: Float
    previous_token_probe: Float
    duplicate_token: Float
    induction: Float
    entropy: Float
    entropy_normalised: Float
    distance: Float
    value_first_share: Float
    # over the set, the queries previous_token counts (i >= 2) and the repeated-token
    # queries duplicate_token reads (version 9); -1: an older folder (``role_counts``)
    n_previous: Int = optional_col(-1)
    n_duplicate: Int = optional_col(-1)


@_table("massive_activations")
class MassiveActivationsTable(Table):
    """Per layer, the largest |residual activation| of a sentence (``analyses.probes``)."""

    layer: Int
    position: Int
    dimension: Int
    value: Float
    median: Float
    ratio: Float


@_table("massive_activations")
class SetMassiveActivationsTable(Table):
    """Per layer, the largest |residual activation| of the set and the sentence it is in."""

    layer: Int
    sentence: Int
    position: Int
    dimension: Int
    value: Float
    median: Float
    ratio: Float


def counts_query_one(roles: Mapping[str, Any]) -> bool:
    """Whether a head-roles table (its columns by name) was written before schema 9, whose
    previous-token score also counts query 1 (its ``n_previous`` is -1 or missing)."""
    n_previous = np.asarray(roles.get("n_previous", []), dtype=np.int64)
    return len(n_previous) == 0 or bool((n_previous < 0).any())


@_table("massive_by_sentence")
class MassiveBySentenceTable(SetMassiveActivationsTable):
    """Every sentence's ``massive_activations`` rows (schema 9): per layer and sentence, its
    largest |residual activation|, where it sits and its ratio to the median (the spread
    across sentences of the set's table)."""
