"""Which Vega renderer the page uses for a figure: SVG, or a canvas for figures with many marks.

Vega's SVG renderer makes one DOM element per mark and sets its attributes one by one;
the browser then styles and lays out every one. Past a few thousand marks that is most
of a page's drawing time (a 512-token sentence page: the attention breakdown, the
orientation scatter and the impact-by-position lines hold about 35,000 SVG elements
between them), while a canvas paints the same marks into one bitmap. Small figures keep
SVG: crisp at any zoom, and their marks are elements that tests and readers can inspect.
Tooltips, widgets and the export menu work alike on both.

Rule: a figure whose default view draws more than ``CANVAS_MARKS`` marks is drawn on a
canvas (``choose_renderer``). Marks are counted as Vega's scenegraph items, one per data
row of each mark layer (a line with N points is N items, as Vega builds it), by
``default_marks``: an upper bound, from the default view's rows (``Figure.inline``) and
the spec's transforms, with no browser. Filters narrow the rows only where a clause
reads ``datum.FIELD == PARAM`` (or a literal) on a column of the rows, at the param's
initial value; other clauses, aggregations and bins are counted as keeping every row,
and a fold multiplies the rows by its number of fields.

A canvas figure's page spec also sets ``config.aria`` false: a canvas has no element per
mark to carry an ARIA description, and Vega-Lite would otherwise format one string per
mark. (The chart's container carries the figure's alt text either way.)
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from attnreport.charts.figure import Columns

CANVAS_MARKS = 1000  # a default view drawing more marks than this is drawn on a canvas
CLAUSE = re.compile(r"^\s*datum\.(\w+)\s*===?\s*(.+?)\s*$")
LITERAL = re.compile(r"^(-?\d+(?:\.\d+)?|'[^'\\]*'|\"[^\"\\]*\")$")
VIEWS = ("layer", "hconcat", "vconcat", "concat")


def choose_renderer(spec: dict[str, Any], inline: Columns) -> str:
    """A canvas when the default view draws more than ``CANVAS_MARKS`` marks, else SVG."""
    return "canvas" if default_marks(spec, inline) > CANVAS_MARKS else "svg"


def page_spec(spec: dict[str, Any], renderer: str) -> dict[str, Any]:
    """The spec the page draws: for a canvas, without per-mark ARIA descriptions."""
    if renderer != "canvas":
        return spec
    return {**spec, "config": {**spec.get("config", {}), "aria": False}}


def default_marks(spec: dict[str, Any], inline: Columns) -> int:
    """Upper bound of the scenegraph items (marks) the default view of ``spec`` draws from
    the rows ``inline`` (see the module docstring)."""
    values = _param_values(spec)
    n_rows = max((len(v) for v in inline.values()), default=0)
    return sum(_view_marks(spec, inline, values, list(range(n_rows)), 1))


def _param_values(spec: dict[str, Any]) -> dict[str, Any]:
    """Initial values of the top-level params that have a scalar one (the widgets)."""
    return {
        p["name"]: p["value"]
        for p in spec.get("params", [])
        if isinstance(p, dict) and isinstance(p.get("value"), (int, float, str))
    }


def _view_marks(
    view: dict[str, Any], inline: Columns, values: dict[str, Any], rows: list[int], fold: int
) -> Iterator[int]:
    """Marks of ``view`` and of the views inside it, given the rows that reach it."""
    for transform in view.get("transform", []):
        if isinstance(transform.get("filter"), str):
            rows = _filtered(transform["filter"], inline, values, rows)
        elif "fold" in transform:
            fold *= max(len(transform["fold"]), 1)
    if "mark" in view:
        yield len(rows) * fold * _items_per_row(view["mark"])
    for name in VIEWS:
        for child in view.get(name, []):
            yield from _view_marks(child, inline, values, rows, fold)
    if isinstance(view.get("spec"), dict):  # facet and repeat: every row in one cell
        yield from _view_marks(view["spec"], inline, values, rows, fold)


def _items_per_row(mark: Any) -> int:
    """Scenegraph items per row: two for a line or area with points laid over it."""
    if isinstance(mark, dict) and mark.get("type") in ("line", "area", "trail"):
        return 2 if mark.get("point") not in (None, False) else 1
    return 1


def _filtered(expr: str, inline: Columns, values: dict[str, Any], rows: list[int]) -> list[int]:
    """The rows that pass the clauses of ``expr`` this module can read (see module doc)."""
    if "||" in expr or "(" in expr:
        return rows
    for clause in expr.split("&&"):
        match = CLAUSE.match(clause)
        if match is None or match.group(1) not in inline:
            continue
        wanted = _operand(match.group(2), values)
        if wanted is None:
            continue
        column = inline[match.group(1)]
        rows = [r for r in rows if _equal(column[r], wanted)]
    return rows


def _operand(text: str, values: dict[str, Any]) -> Any:
    """A literal's value, a param's initial value, or None when it is neither."""
    if LITERAL.match(text):
        return text[1:-1] if text[0] in "'\"" else float(text)
    return values.get(text)


def _equal(value: Any, wanted: Any) -> bool:
    """JavaScript ``==`` for the numbers and strings of the rows."""
    if isinstance(wanted, str) and not isinstance(value, str):
        try:
            return float(wanted) == value
        except ValueError:
            return False
    if isinstance(value, str) and not isinstance(wanted, str):
        try:
            return float(value) == wanted
        except ValueError:
            return False
    return value == wanted
