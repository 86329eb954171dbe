"""Typed tables of the head-role scores and massive activations (schema version 5).

Definitions in ``docs/results-schema.md`` (``head_roles``, ``massive_activations``) and in
``attnreport.analyses.roles`` and ``attnreport.analyses.probes``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnreport.results.tables import HeadColumns, SentenceColumn, Table, _table, col


@dataclass(frozen=True, eq=False)
class _HeadRolesColumns(HeadColumns):
    """One sentence's head-role scores (``analyses.roles``), one row per (layer, head): the
    columns of ``head_roles`` and, after its ``sentence`` column, of ``head_roles_by_sentence``."""

    previous_token: np.ndarray = col("float")
    duplicate_token: np.ndarray = col("float")
    entropy: np.ndarray = col("float")  # nats
    entropy_normalised: np.ndarray = col("float")
    distance: np.ndarray = col("float")  # tokens
    value_first_share: np.ndarray = col("float")
    n_queries: np.ndarray = col("int")
    n_first: np.ndarray = col("int")
    n_duplicate: np.ndarray = col("int")
    duplicate_weight: np.ndarray = col("float")


@_table("head_roles")
class HeadRolesTable(_HeadRolesColumns):
    """One sentence's head-role scores (``analyses.roles``), one row per (layer, head)."""


@_table("head_roles_by_sentence")
class HeadRolesBySentenceTable(_HeadRolesColumns, SentenceColumn):
    """Every sentence's ``head_roles`` rows, with the sentence's index first."""


@_table("head_roles")
class HeadRolesSetTable(HeadColumns):
    """The set's head-role scores: sentence scores pooled, probe scores on the probes."""

    previous_token: np.ndarray = col("float")
    previous_token_probe: np.ndarray = col("float")
    duplicate_token: np.ndarray = col("float")
    induction: np.ndarray = col("float")
    entropy: np.ndarray = col("float")
    entropy_normalised: np.ndarray = col("float")
    distance: np.ndarray = col("float")
    value_first_share: np.ndarray = col("float")


@_table("massive_activations")
class MassiveActivationsTable(Table):
    """Per layer, the largest |residual activation| of a sentence (``analyses.probes``)."""

    layer: np.ndarray = col("int")
    position: np.ndarray = col("int")
    dimension: np.ndarray = col("int")
    value: np.ndarray = col("float")
    median: np.ndarray = col("float")
    ratio: np.ndarray = col("float")


@_table("massive_activations")
class SetMassiveActivationsTable(Table):
    """Per layer, the largest |residual activation| of the set and the sentence it is in."""

    layer: np.ndarray = col("int")
    sentence: np.ndarray = col("int")
    position: np.ndarray = col("int")
    dimension: np.ndarray = col("int")
    value: np.ndarray = col("float")
    median: np.ndarray = col("float")
    ratio: np.ndarray = col("float")
