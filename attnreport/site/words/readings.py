"""Reading results tables for the wording: a typed table (or a plain column table) as
plain columns, per-head values and layer means, and the ``Finding`` a finding states.

The wording modules (findings, claims, prose, alt text) read tables only through these,
so they read a typed table exactly as its results file reads back.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from attnreport.analyses import sinks
from attnreport.results.codec import decode_column, decoded_column
from attnreport.vocabulary import MOST

Columns = Mapping[str, Sequence[Any]]
Heads = dict[tuple[int, int], float]


@dataclass(frozen=True)
class Finding:
    """One key finding. ``figure`` is the figure key that shows it (``set-first-focus``);
    ``sentence`` is the page that holds that figure: None for the index page, else the
    sentence index (the intervention grids live on one sentence's page). ``more``: findings
    on the same subject, said in the same paragraph after this one, each with its figure.
    """

    key: str
    text: str
    figure: str
    sentence: int | None = None
    more: tuple[Finding, ...] = ()


def columns(table: Any) -> Columns:
    """The column dict of a typed results table (``results.tables``: each column as the
    results file holds it once read back, ``codec.decoded_column``), or of a table given
    bare or as ``{"columns": {...}}``, each column decoded from the results' compact
    encoding (``results.codec``) to a list; empty for None."""
    if hasattr(table, "arrays"):
        return {k: decoded_column(v) for k, v in table.arrays().items()}
    if not table:
        return {}
    cols = table.get("columns", table) if "columns" in table else table
    return {k: decode_column(v) if isinstance(v, dict) else v for k, v in cols.items()}


def per_head(table: Any, statistic: str) -> Heads:
    """``{(layer, head): value}`` of ``statistic`` from a wide table (a column named
    ``statistic``) or a long one (``statistic`` and ``value`` columns, e.g. focus_pooled).
    """
    cols = columns(table)
    if not cols:
        return {}
    if statistic in cols:
        return sinks.head_values(cols, statistic)
    rows = zip(cols["layer"], cols["head"], cols["statistic"], cols["value"], strict=True)
    return {(int(a), int(b)): float(v) for a, b, s, v in rows if s == statistic}


def layer_means(heads: Heads) -> dict[int, float]:
    """Mean over heads, per layer, layers ascending."""
    acc: dict[int, list[float]] = {}
    for (layer, _), v in sorted(heads.items()):
        acc.setdefault(layer, []).append(v)
    return {k: sum(v) / len(v) for k, v in acc.items()}


def top_key(values: Mapping[Any, float]) -> Any:
    """The key with the largest value; ties go to the smallest key."""
    return min(values, key=lambda k: (-values[k], k))


def sink_heads(first_focus: Heads) -> list[tuple[int, int]]:
    """The heads that are sinks by argmax (``sinks.is_argmax_sink``), sorted."""
    return sorted(k for k, v in first_focus.items() if sinks.is_argmax_sink(v))


def sink_layers(first_focus: Heads) -> list[int]:
    """The sink layers: those where more than half of the heads are sink heads (by argmax),
    ascending. The one definition every finding, claim and figure uses."""
    heads: dict[int, list[bool]] = {}
    for (layer, _), v in first_focus.items():
        heads.setdefault(layer, []).append(sinks.is_argmax_sink(v))
    return sorted(k for k, v in heads.items() if sum(v) > MOST * len(v))


def arrays(table: Any) -> dict[str, np.ndarray]:
    """``columns`` of ``table`` as numpy arrays (empty for None)."""
    return {k: np.asarray(v) for k, v in columns(table).items()}
