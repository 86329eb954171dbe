"""Typed tables of the head-role scores and massive activations (schema version 5).

Definitions in ``docs/results-schema.md`` (``head_roles``, ``massive_activations``) and in
``attnreport.analyses.roles`` and ``attnreport.analyses.probes``.
"""

from __future__ import annotations

from dataclasses import dataclass

from attnreport.results.columns import Float, Int, Table, _table
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


@_table("massive_by_sentence")
class MassiveBySentenceTable(SetMassiveActivationsTable):
    """Every sentence's ``massive_activations`` rows (schema 9): per layer and sentence, its
    largest |residual activation|, where it sits and its ratio to the median (the spread
    across sentences of the set's table)."""
