"""Pieces shared by the figure modules: token axes, tooltips, titles, sizes, defaults."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import altair as alt
import numpy as np

from attnreport.charts.spec import position_window
from attnreport.jsontypes import VegaSpec
from attnreport.results import Manifest, SentenceResults
from attnreport.results.view import default_head  # noqa: F401  (builders use common.default_head)

# Axis label of a token position: "3 focus". Reads the ``tokens`` param (see widgets).
TOKEN_LABEL = "datum.value + ' ' + tokens[datum.value]"


def cell_step(n_tokens: int, width: float = 560.0, lo: float = 7.0, hi: float = 22.0) -> float:
    """Pixel size of one heatmap cell so that ``n_tokens`` cells fill about ``width``."""
    return float(min(hi, max(lo, round(width / max(n_tokens, 1), 1))))


def token_axis(title: str, n_tokens: int, angle: int = 0) -> VegaSpec:
    """X or Y channel options for a token position field: fixed domain, token labels.

    ``angle`` is for a few tokens; past 30 tokens an angled axis turns vertical and every
    axis uses a smaller font, so one label fits in one cell; and labels that would still
    overlap (cells drawn smaller than the font, to fit the column) are left out, every
    other one in turn, so those shown stay readable (and no tick is drawn: a tick per
    token is a grey band); the axis title keeps 8 px from the longest label.
    """
    dense = n_tokens > 30
    axis = alt.Axis(
        title=title,
        labelExpr=TOKEN_LABEL,
        labelAngle=-90 if dense and angle else angle,
        labelFontSize=9 if dense else 11,
        labelLimit=120,
        # vertical labels of mixed lengths: room between the longest and the axis title
        **({"labelOverlap": "parity", "ticks": False, "titlePadding": 8} if dense else {}),
    )
    return {"axis": axis, "scale": alt.Scale(domain=list(range(n_tokens)))}


def position_axis(title: str, n_tokens: int, angle: int = 0) -> VegaSpec:
    """``token_axis`` for a chart that windows a long input (see ``position_window``): sized
    for the positions shown, with the domain left to the window's rows."""
    if not position_window.is_windowed(n_tokens):
        return token_axis(title, n_tokens, angle)
    axis = token_axis(title, position_window.shown_positions(n_tokens), angle)
    axis.pop("scale")
    return axis


def token_calcs(**fields: str) -> dict[str, str]:
    """``calculate`` expressions giving token texts, e.g. ``query_token="datum.query"``."""
    return {name: f"tokens[{position}]" for name, position in fields.items()}


# How a title names a widget's value where "name value" would show a code name, in as
# few characters (a phone wraps the title at most once): "top target", "2nd target",
# "rank 4 target"; "next layer" (where the attention is observed).
TITLE_PARTS = {
    "sort_idx": "(['top', '2nd', '3rd'][sort_idx] || 'rank ' + sort_idx) + ' target'",
    "observation": "observation + ' layer'",
}


def selection_title(text: str, subtitle: str, *params: str, n_tokens: int = 0) -> alt.TitleParams:
    """A title that names the widgets' current values, e.g. "Attention map (layer 3, head 1)";
    with ``n_tokens`` of a windowed input, also the positions shown."""
    parts = [TITLE_PARTS.get(p, f"'{p} ' + {p}") for p in params]
    if position_window.is_windowed(n_tokens):
        parts.append(position_window.window_title_part(n_tokens))
    if not parts:
        return alt.TitleParams(text=text, subtitle=subtitle)
    joined = " + ', ' + ".join(parts)
    expr = f"'{text} (' + {joined} + ')'"
    return alt.TitleParams(text=alt.ExprRef(expr=expr), subtitle=subtitle)


def tip(field: str, title: str, fmt: str | None = None) -> alt.Tooltip:
    """One tooltip entry; ``field`` carries its type (``"score:Q"``)."""
    return alt.Tooltip(field, title=title, format=fmt) if fmt else alt.Tooltip(field, title=title)


def link_tips(rows: Mapping[str, Any]) -> list[alt.Tooltip]:
    """The tooltip entry saying what a click opens, for rows linked to the sentence pages
    (an ``opens`` column: ``figures.links.with_links``); none for other rows."""
    return [tip("opens:N", "click opens")] if "opens" in rows else []


def link_cursor(rows: Mapping[str, Any]) -> dict[str, str]:
    """Mark properties of a mark whose rows are linked: the pointer says it is a link."""
    return {"cursor": "pointer"} if "href" in rows else {}


def token_tips() -> list[alt.Tooltip]:
    """The tooltip entries naming a cell's current token and target token."""
    return [tip("query_token:N", "current token"), tip("key_token:N", "target token")]


def n_layers_heads(sentence: SentenceResults) -> tuple[int, int]:
    """Numbers of layers and heads, read from the focus table (one row per layer and head).

    The attention triangles are not used: a sentence longer than ``map_tokens`` has none.
    """
    focus = sentence.tables.focus.arrays()
    layers, heads = focus["layer"], focus["head"]
    return (int(max(layers)) + 1, int(max(heads)) + 1) if len(layers) else (0, 0)


def positional_scheme(manifest: Manifest) -> str:
    """The model's positional scheme, lower case ("rope", "alibi", "absolute", ...).

    Read from ``manifest.model.positional``; "unknown" when empty.
    """
    return manifest.model.positional.lower() or "unknown"


def layer_x(n_layers: int) -> alt.X:
    """The x axis of a chart drawn against layer: ``layer:Q`` over 0..n_layers-1, whole
    numbers only (``window_bands`` shade on it; not rounded out to a "nice" end, which
    drew a layer past the last)."""
    return alt.X(
        "layer:Q",
        title="layer",
        scale=alt.Scale(domain=[0, max(n_layers - 1, 1)], nice=False),
        axis=alt.Axis(format="d", tickMinStep=1),
    )


def window_bands(manifest: Manifest) -> alt.Chart | None:
    """A light band behind each windowed layer of a chart whose x axis is ``layer_x``
    (layer it first under the chart's marks); None when no layer has a window."""
    windows = manifest.model.layer_windows
    if not windows:
        return None
    values = [
        {"from": layer - 0.5, "to": layer + 0.5, "layer": layer, "window": size}
        for layer, size in sorted(windows.items())
    ]
    return (
        alt.Chart(alt.Data(values=values))
        .mark_rect(color="#9aa7b8", opacity=0.16)
        .encode(
            x=alt.X("from:Q"),
            x2="to:Q",
            tooltip=[tip("layer:O", "windowed layer"), tip("window:Q", "sliding window (tokens)")],
        )
    )


def has_position_term(manifest: Manifest, breakdown: dict[str, np.ndarray]) -> bool:
    """False for absolute-position models (and when every position term is 0)."""
    if positional_scheme(manifest) in ("absolute", "learned", "none", "sinusoidal"):
        return False
    position = breakdown["position"]
    return bool(np.any(position != 0))
