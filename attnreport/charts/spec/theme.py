"""The site's colour language and chart defaults, shared by every figure.

- Attention weight (post-softmax, 0..1): sequential on [0, 1] (``PROBABILITY_SCHEME``).
  Pre-softmax scores compare only within a row: the map colours s_ij - max_j s_ij, which
  is 0 for the row's top target (``relative_score_scale``). Diverging scales only where
  0 means something (orientation), centred at 0.
- The top target of a row: green when it is the current token itself (``SELF_COLOR``),
  purple when it is the first token (``FIRST_COLOR``), dark grey otherwise. Row 0 can only
  attend to itself: it has no choice, so it is neither "self" nor "first" but its own
  kind (``KIND_ZERO``, a pale grey).
- Focus lines: self focus in greens, first-token focus in purples, concentration in
  oranges; rank 0 (the strongest head of each layer) is the darkest line.
- Score terms: position mustard, bias brown, content blue, query-only light grey.
- Layers (one line each): cividis, early layers dark blue, late layers yellow.
"""

from __future__ import annotations

import functools
import json

import altair as alt

from attnreport.jsontypes import VegaSpec

ATTENTION_RANGE = ["#3b4cc0", "#8db0fe", "#dddddd", "#f49a7b", "#b40426"]
SELF_COLOR = "#1a9850"
FIRST_COLOR = "#762a83"
OTHER_COLOR = "#4d4d4d"

# Top-target kind, the legend order and colours of ``kind_scale``; token 0 sees only
# itself, so its row is counted neither self nor first (``KIND_ZERO``)
KIND_SELF, KIND_FIRST, KIND_OTHER = "self", "first token", "other token"
KIND_ZERO = "token 0 (sees only itself)"
KIND_DOMAIN = [KIND_SELF, KIND_FIRST, KIND_OTHER, KIND_ZERO]
KIND_RANGE = [SELF_COLOR, FIRST_COLOR, "#9e9e9e", "#dcdcdc"]

TERM_COLORS = {
    "position": "#e6ab02",
    "bias": "#a6761d",
    "content": "#1f78b4",
    "query_only": "#cccccc",
}
TERM_LABELS = {
    "position": "position",
    "bias": "bias (target only)",
    "content": "content",
    "query_only": "query only (no effect after softmax)",
}

PROBABILITY_SCHEME = "blues"  # attention weights on [0, 1]
RELATIVE_FLOOR = -8.0
# Scores relative to the row's top, on [RELATIVE_FLOOR, 0]: white to dark orange (d3's
# "oranges" at five stops), a hue no mark drawn on the map has (its dots are green, purple
# and grey: ``KIND_RANGE``), so a dot never disappears into its cell.
RELATIVE_RANGE = ["#fff5eb", "#fdd0a2", "#fd8d3c", "#d94801", "#7f2704"]

# Categories (the scale factors ε, the tensors Q/K/V): Okabe and Ito's colour-blind-safe set.
CATEGORY_RANGE = ["#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#000000"]

STATISTIC_SCHEMES = {"self_focus": "greens", "first_focus": "purples", "concentration": "oranges"}
LAYER_SCHEME = {"name": "cividis", "extent": [0, 0.92]}
MAGNITUDE_SCHEME = "viridis"
ORIENTATION_SCHEME = "blueorange"

FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif"
# The static images' text: vl-convert lays it out with Liberation Sans (``export.fonts``),
# whose widths Arial's match (and Helvetica's nearly), so a viewer draws it in the space
# it was given; the page's own FONT would let a wider system font (DejaVu Sans, about a
# fifth wider) run over its neighbours and out of the image. Where none of those three is
# installed, DejaVu Sans Condensed comes closest; ``STATIC_SLACK`` px more on the right
# keeps its longer titles inside the image.
STATIC_FONT = "'Liberation Sans', Arial, Helvetica, 'DejaVu Sans Condensed', sans-serif"
STATIC_SLACK = 30


def attention_scale(domain: list[float] | None = None) -> alt.Scale:
    """Attention weights (``domain=[0, 1]``): sequential, white at 0 to dark blue at 1, so
    the colour reads as an amount. Without a domain, the blue -> red ramp over the data."""
    if domain is None:
        return alt.Scale(range=ATTENTION_RANGE, interpolate="lab")
    return alt.Scale(domain=domain, scheme=PROBABILITY_SCHEME, clamp=True)


def relative_score_scale() -> alt.Scale:
    """Scores relative to their row's highest, s_ij - max_j s_ij (<= 0): sequential, dark at
    0 (the row's top target), fading to white at ``RELATIVE_FLOOR`` and below (a target
    with at most e^RELATIVE_FLOOR of the top target's weight)."""
    stops = len(RELATIVE_RANGE) - 1
    domain = [RELATIVE_FLOOR * (1 - i / stops) for i in range(stops + 1)]  # -8, -6, ..., 0
    return alt.Scale(domain=domain, range=RELATIVE_RANGE, interpolate="lab", clamp=True)


def kind_scale() -> alt.Scale:
    """Colour scale for the top-target kind (self / first token / other token / token 0)."""
    return alt.Scale(domain=KIND_DOMAIN, range=KIND_RANGE)


def kind_expr(query: str, key: str) -> str:
    """Vega expression naming the kind of target ``key`` for current token ``query``
    (query 0, which can attend only to itself, is ``KIND_ZERO``)."""
    return (
        f"{query} == 0 ? '{KIND_ZERO}' : ({key} == {query} ? '{KIND_SELF}' : "
        f"({key} == 0 ? '{KIND_FIRST}' : '{KIND_OTHER}'))"
    )


def lines_scheme(statistic: str) -> VegaSpec:
    """Sequential scheme for focus lines, darkest first (rank 0)."""
    return {"name": STATISTIC_SCHEMES[statistic], "extent": [1.0, 0.35]}


def configure(chart: alt.TopLevelMixin) -> alt.TopLevelMixin:
    """Apply the site-wide look (fonts, sizes, no view border) to a top-level chart."""
    return (
        chart.configure(font=FONT, background="white")
        .configure_view(stroke=None)
        .configure_axis(labelFontSize=11, titleFontSize=12, titleFontWeight="normal")
        .configure_legend(labelFontSize=11, titleFontSize=12, labelLimit=260)
        .configure_title(fontSize=15, anchor="start", subtitleFontSize=12, subtitleColor="#555")
        .configure_header(labelFontSize=12, titleFontSize=12)
    )


@functools.cache
def _config_json() -> str:
    return json.dumps(configure(alt.Chart()).to_dict(validate=False)["config"])


def site_config() -> VegaSpec:
    """The ``config`` of a spec with the site-wide look: what ``configure`` adds, as a new
    dict each call. Setting it on a spec dict is much cheaper than ``configure``, which
    deep-copies the whole chart once per ``configure_*`` call."""
    return json.loads(_config_json())
