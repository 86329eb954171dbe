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
compares a column of the rows with a literal, a param or a param plus a literal
(``datum.FIELD == PARAM``, ``datum.query < positions_from + 128``), at the params' initial
values; other clauses, aggregations and bins are counted as keeping every row. A fold
multiplies the rows by its number of fields, until a filter keeps one value of the key
field it wrote (``datum.term == 'bias'``).

A canvas figure's page spec also sets ``config.aria`` false: a canvas has no element per
mark to carry an ARIA description, and Vega-Lite would otherwise format one string per
mark. (The chart's container carries the figure's alt text either way.)
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Iterator
from typing import Any

from attnreport.charts.figure import Columns
from attnreport.jsontypes import VegaSpec

CANVAS_MARKS = 1000  # a default view drawing more marks than this is drawn on a canvas
CLAUSE = re.compile(r"^\s*datum\.(\w+)\s*(===?|<=|>=|<|>)\s*(.+?)\s*$")
SUM = re.compile(r"^(\w+)\s*\+\s*(\d+(?:\.\d+)?)$")  # a param plus a literal
ParamValues = dict[str, int | float | str]  # a spec's widget params: name -> initial value
ORDERS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}
LITERAL = re.compile(r"^(-?\d+(?:\.\d+)?|'[^'\\]*'|\"[^\"\\]*\")$")
VIEWS = ("layer", "hconcat", "vconcat", "concat")


def choose_renderer(spec: VegaSpec, inline: Columns) -> str:
    """A canvas when the default view draws more than ``CANVAS_MARKS`` marks, else SVG."""
    return "canvas" if default_marks(spec, inline) > CANVAS_MARKS else "svg"


def page_spec(spec: VegaSpec, renderer: str) -> VegaSpec:
    """The spec the page draws: for a canvas, without per-mark ARIA descriptions."""
    if renderer != "canvas":
        return spec
    return {**spec, "config": {**spec.get("config", {}), "aria": False}}


def default_marks(spec: VegaSpec, inline: Columns) -> int:
    """Upper bound of the scenegraph items (marks) the default view of ``spec`` draws from
    the rows ``inline`` (see the module docstring)."""
    values = _param_values(spec)
    n_rows = max((len(v) for v in inline.values()), default=0)
    return sum(_view_marks(spec, inline, values, list(range(n_rows))))


def _param_values(spec: VegaSpec) -> ParamValues:
    """Initial values of the top-level params that have a scalar one (the widgets)."""
    return {
        p["name"]: p["value"]
        for p in spec.get("params", [])
        if isinstance(p, dict) and isinstance(p.get("value"), (int, float, str))
    }


def _view_marks(
    view: VegaSpec,
    inline: Columns,
    values: ParamValues,
    rows: list[int],
    folds: tuple[tuple[str, int], ...] = (),
) -> Iterator[int]:
    """Marks of ``view`` and of the views inside it, given the rows that reach it and the
    folds that multiplied them: (the key field a fold wrote, its number of fields)."""
    for transform in view.get("transform", []):
        if isinstance(transform.get("filter"), str):
            rows = _filtered(transform["filter"], inline, values, rows)
            folds = tuple(f for f in folds if not _picks_one(transform["filter"], f[0]))
        elif "fold" in transform:
            key = (transform.get("as") or ["key"])[0]
            folds += ((key, max(len(transform["fold"]), 1)),)
    if "mark" in view:
        yield len(rows) * math.prod(n for _, n in folds) * _items_per_row(view["mark"])
    for name in VIEWS:
        for child in view.get(name, []):
            yield from _view_marks(child, inline, values, rows, folds)
    if isinstance(view.get("spec"), dict):  # facet and repeat: every row in one cell
        yield from _view_marks(view["spec"], inline, values, rows, folds)


def _picks_one(expr: str, key: str) -> bool:
    """Whether ``expr`` keeps one value of the fold key field ``key`` (``datum.term ==
    'bias'``): of the rows the fold made from one row, one passes."""
    return any(
        field == key and op in ("==", "===") and LITERAL.match(operand)
        for field, op, operand in _clauses(expr)
    )


def _items_per_row(mark: Any) -> int:
    """Scenegraph items per row: two for a line or area with points laid over it."""
    if isinstance(mark, dict) and mark.get("type") in ("line", "area", "trail"):
        return 2 if mark.get("point") not in (None, False) else 1
    return 1


def _clauses(expr: str) -> list[tuple[str, str, str]]:
    """(field, operator, operand) of each ``datum.FIELD OP OPERAND`` clause of an ``&&``
    chain; none for an expression with ``||`` or parentheses, which is not read at all."""
    if "||" in expr or "(" in expr:
        return []
    matches = (CLAUSE.match(clause) for clause in expr.split("&&"))
    return [m.groups() for m in matches if m is not None]


def _filtered(expr: str, inline: Columns, values: ParamValues, rows: list[int]) -> list[int]:
    """The rows that pass the clauses of ``expr`` this module can read (see module doc)."""
    for field, op, operand in _clauses(expr):
        wanted = _operand(operand, values) if field in inline else None
        if wanted is None:
            continue
        column = inline[field]
        if op in ORDERS:
            rows = [r for r in rows if _ordered(ORDERS[op], column[r], wanted)]
        else:
            rows = [r for r in rows if _equal(column[r], wanted)]
    return rows


def _operand(text: str, values: ParamValues) -> Any:
    """A literal's value, a param's initial value, a numeric param's plus a number, or
    None when it is none of them."""
    if LITERAL.match(text):
        return text[1:-1] if text[0] in "'\"" else float(text)
    total = SUM.match(text)
    if total is not None:
        start = values.get(total.group(1))
        numeric = isinstance(start, (int, float)) and not isinstance(start, bool)
        return start + float(total.group(2)) if numeric else None
    return values.get(text)


def _ordered(compare: Callable[[Any, Any], bool], value: Any, wanted: Any) -> bool:
    """A numeric comparison; a row whose value is not a number is counted as kept."""
    if isinstance(value, (int, float)) and isinstance(wanted, (int, float)):
        return compare(value, wanted)
    return True


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
