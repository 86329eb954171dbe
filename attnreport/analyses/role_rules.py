"""When a head is given a role: the thresholds the head atlas, the findings and the pages share.

A head has a role when its score for it reaches ``ROLE_THRESHOLD``. The duplicate-token
score reads only the queries whose token occurred earlier, which are few in short
sentences; it names a role only where it rests on at least ``MIN_REPEATS`` such queries,
so that its standard error, at most ``0.5 / sqrt(n)`` for a mean of values in [0, 1], is
at most a third of the threshold. Below that the role is not assigned and the page says
why. Pure and torch-free: the render reads it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

ROLE_THRESHOLD = 0.3  # a head has a role when its score for it reaches this
MIN_REPEATS = 25  # repeated-token queries the duplicate-token role needs


def worst_error(n: int) -> float:
    """The largest standard error of a mean of ``n`` values in [0, 1]: ``0.5 / sqrt(n)``."""
    return 0.5 / math.sqrt(n) if n > 0 else math.inf


def duplicate_counts(roles: Mapping[str, Any], by_sentence: Mapping[str, Any] | None) -> np.ndarray:
    """(row,) int64: per row of the set's ``head_roles`` (columns), the repeated-token
    queries its duplicate-token score reads: its ``n_duplicate`` (schema 9), else the
    sentences' counts summed from ``head_roles_by_sentence`` (older folders)."""
    recorded = np.asarray(roles.get("n_duplicate", []), dtype=np.int64)
    if len(recorded) == len(roles["head"]) and (recorded >= 0).all():
        return recorded
    totals: dict[tuple[int, int], int] = {}
    if by_sentence is not None:
        for layer, head, n in zip(
            by_sentence["layer"], by_sentence["head"], by_sentence["n_duplicate"], strict=True
        ):
            key = (int(layer), int(head))
            totals[key] = totals.get(key, 0) + int(n)
    keys = zip(roles["layer"], roles["head"], strict=True)
    return np.array([totals.get((int(a), int(b)), 0) for a, b in keys], dtype=np.int64)
