"""The KL strip under an intervention grid: KL(p_base || p_modified) of the next-token
distribution against position, one line per cell kind (a scale factor, a tensor).

Its scales are fixed when the figure is built, from every cell's KL: a cell's KL does not
depend on the head or the observed layer the grid shows, so the strip keeps its axes
when they change, and it never asks Vega for the extent of rows not loaded yet (an empty
view's extent is infinite, and Vega warns). Lines that coincide at the drawing's scale
(every epsilon small enough to flatten attention gives the same KL) are drawn side by
side, shifted by a fraction of a position (``dodges``), and the caption says which.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import altair as alt

from attnreport.charts.spec.common import tip
from attnreport.charts.spec.theme import CATEGORY_RANGE

UNMODIFIED = "unmodified"  # the run without intervention: KL 0 by definition, not drawn
# One dash pattern per cell kind, beside its colour, so that two lines stay apart in grey.
DASHES = [[1, 0], [6, 3], [2, 2], [8, 2, 2, 2], [4, 4], [1, 3], [10, 4]]
COINCIDE = 0.01  # lines closer than this share of the KL axis everywhere are one line drawn
DODGE = 0.16  # positions between two side-by-side lines


@dataclass(frozen=True)
class Strip:
    """What the strip's scales and dodges are made of, read off the rows: ``positions``
    the x domain's length, ``top`` the largest KL, ``offsets`` each line's shift along
    x (empty: none), ``together`` the groups of lines drawn side by side (panel, labels)."""

    positions: int
    top: float
    offsets: dict[str, float]
    together: tuple[tuple[str, tuple[str, ...]], ...]


def series(rows: Mapping[str, list], panel: str, line: str) -> dict[tuple[str, str], list]:
    """(panel value, line value) -> KL by position, from a grid's rows (one row per
    (query, key) pair; the KL is read where ``key == query``), leaving out the unmodified run."""
    out: dict[tuple[str, str], dict[int, float]] = {}
    for i, (q, k) in enumerate(zip(rows["query"], rows["key"], strict=True)):
        name = (str(rows[panel][i]), str(rows[line][i]))
        if q == k and UNMODIFIED not in name:
            out.setdefault(name, {})[int(q)] = float(rows["kl"][i])
    return {name: [by_q[q] for q in sorted(by_q)] for name, by_q in out.items()}


def strip_of(lines: Mapping[tuple[str, str], Sequence[float]], order: Sequence[str]) -> Strip:
    """The strip of ``lines`` ((panel, line) -> KL by position); ``order``: the line labels
    as the legend lists them. Lines of one panel within ``COINCIDE`` of the axis at every
    position are drawn side by side; then every line is shifted by its place in ``order``."""
    top = max((v for kl in lines.values() for v in kl), default=0.0)
    positions = max((len(kl) for kl in lines.values()), default=1)
    together = []
    for panel in dict.fromkeys(p for p, _ in lines):
        own = [(label, lines[(panel, label)]) for label in order if (panel, label) in lines]
        groups: list[list[str]] = []
        for label, kl in own:
            near = next((g for g in groups if _close(lines[(panel, g[0])], kl, top)), None)
            (near.append(label) if near is not None else groups.append([label]))
        together += [(panel, tuple(g)) for g in groups if len(g) > 1]
    offsets = {}
    if together:
        offsets = {label: (k - (len(order) - 1) / 2) * DODGE for k, label in enumerate(order)}
    return Strip(positions, top, offsets, tuple(together))


def _close(a: Sequence[float], b: Sequence[float], top: float) -> bool:
    return len(a) == len(b) and all(abs(x - y) <= COINCIDE * top for x, y in zip(a, b, strict=True))


def together_sentence(strip: Strip) -> str:
    """The caption sentence naming the lines drawn side by side ("" when none)."""
    if not strip.together:
        return ""
    parts = [f"{' and '.join(labels)} for {panel}" for panel, labels in strip.together]
    return (
        f" Lines that coincide at this scale ({'; '.join(parts)}: their KL differs by less "
        f"than {COINCIDE:.0%} of the axis at every position) are drawn side by side, each line "
        "shifted by a fraction of a position."
    )


def kl_panel(
    color_field: str,
    color_sort: list[str],
    tips: list[alt.Tooltip],
    strip: Strip,
    title: str = "cell",
) -> alt.Chart:
    """KL(p_base || p_modified) of the next-token distribution against position, one
    colour-blind-safe colour (``CATEGORY_RANGE``) and dash pattern (``DASHES``) per cell
    kind, on the fixed scales of ``strip`` (shifted by its offsets); the unmodified run
    (``UNMODIFIED`` in ``color_field``) is not drawn."""
    field = color_field.split(":")[0]
    top = strip.top if strip.top > 0 else 1.0
    offsets = json.dumps(strip.offsets, ensure_ascii=False)
    shifted = f"datum.query + ({offsets}[datum.{field}] || 0)" if strip.offsets else "datum.query"
    return (
        alt.Chart()
        .transform_filter(f"datum.key == datum.query && datum.{field} != '{UNMODIFIED}'")
        .transform_calculate(kl_x=shifted)
        .mark_line(point=alt.OverlayMarkDef(size=14), strokeWidth=1.2)
        .encode(
            x=alt.X(
                "kl_x:Q",
                title="position",
                axis=alt.Axis(format="d", tickMinStep=1),
                scale=alt.Scale(domain=[-0.5, strip.positions - 0.5], nice=False, zero=False),
            ),
            y=alt.Y("kl:Q", title="KL divergence (nats)", scale=alt.Scale(domain=[0, top])),
            color=alt.Color(
                color_field,
                sort=color_sort,
                title=title,
                scale=alt.Scale(domain=color_sort, range=CATEGORY_RANGE[: len(color_sort)]),
            ),
            strokeDash=alt.StrokeDash(
                color_field,
                sort=color_sort,
                scale=alt.Scale(domain=color_sort, range=DASHES[: len(color_sort)]),
                legend=None,  # the colour legend names the cells; the dashes tell them apart
            ),
            tooltip=[
                *tips,
                tip("query_token:N", "token"),
                tip("query:O", "position"),
                tip("kl:Q", "KL divergence", ".4g"),
            ],
        )
        .properties(width=220, height=110)
    )
