"""Alt text of the comparison index's figures, computed from the rows they draw.

What a screen reader hears instead of each chart: what is plotted, and the point where
the models differ most or the largest value, named with its model. Inputs are the
comparison's tables (``measures.curve_rows``, ``role_count_rows``, ``role_layer_rows``,
``kl_rows``: column name -> values).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from attnreport.jsontypes import Row
from attnreport.multi.measures import CURVES

Columns = Mapping[str, Sequence[Any]]


def _rows(table: Columns, **match: Any) -> list[Row]:
    """The table's rows (dicts) whose columns equal ``match``."""
    names = list(table)
    rows = [dict(zip(names, values, strict=True)) for values in zip(*table.values(), strict=True)]
    return [r for r in rows if all(r[k] == v for k, v in match.items())]


def _peak(rows: list[Row], value: str, unit: str = "") -> str:
    top = max(rows, key=lambda r: r[value])
    return f"{top[value]:.3g}{unit} at depth {top['depth']:.2f} (layer {top['layer']})"


def curve_alt(table: Columns, statistic: str, models: Sequence[str]) -> str:
    """A line chart of one per-layer measure against relative depth, one line per model."""
    name = CURVES[statistic][0]
    peaks = [
        f"{model} peaks at {_peak(rows, 'value', '%' if statistic == 'sink_rate' else '')}"
        for model in models
        if (rows := _rows(table, statistic=statistic, model=model))
    ]
    return (
        f"Line chart: {name} of each layer (y) against its relative depth, layer / (L - 1) "
        f"(x), one line per model. " + "; ".join(peaks) + "."
    )


def _tops(table: Columns, models: Sequence[str], value: str, say) -> str:
    """``say(model, row)`` of each model's row with the largest ``value``, joined."""
    tops = [
        say(model, max(rows, key=lambda r: r[value]))
        for model in models
        if (rows := _rows(table, model=model))
    ]
    return "; ".join(tops) + "."


def roles_alt(table: Columns, models: Sequence[str]) -> str:
    """Bars of each model's share of heads per role."""
    return "Bar chart: the share of each model's heads that take each role, one bar per model and role. " + _tops(  # fmt: skip
        table, models, "percent",
        lambda model, top: f"{model}'s most common is {top['role']} ({top['percent']:.0f}% of its heads)",  # fmt: skip
    )  # fmt: skip


def role_curves_alt(table: Columns, models: Sequence[str]) -> str:
    """Panels per role of the share of each layer's heads with that role, against depth."""
    roles = list(dict.fromkeys(table["role"]))
    parts = []
    for role in roles:
        rows = _rows(table, role=role)
        top = max(rows, key=lambda r: r["percent"])
        parts.append(f"{role}: at most {top['percent']:.0f}% ({top['model']}, depth {top['depth']:.2f})")  # fmt: skip
    return (
        "Line charts, one panel per role: the percentage of each layer's heads that take the "
        "role (y) against relative depth (x), one line per model. " + "; ".join(parts) + "."
    )


def kl_alt(table: Columns, models: Sequence[str]) -> str:
    """Bars of the next-token KL of every intervention, per model."""
    return "Bar chart: the mean KL divergence of the next-token distribution under each intervention, one bar per model. " + _tops(  # fmt: skip
        table, models, "mean_kl",
        lambda model, top: f"{model} changes most under {top['cell']} ({top['mean_kl']:.3g} nats at layer {top['layer']})",  # fmt: skip
    )  # fmt: skip
