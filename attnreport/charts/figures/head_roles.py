"""Index figures of the head roles (``set.json`` ``head_roles``, schema version 5).

- ``head-atlas``: a layers x heads grid, each cell coloured by the head's strongest role:
  the largest of its previous-token, duplicate-token and induction scores when that
  reaches ``ROLE_THRESHOLD``; else "first token (sink)" when it is a sink by Gu et al.'s
  measure, its first-token probability above ``sinks.EPS`` (most heads of a model with sinks park there, and on the sentences an induction
  head has no earlier copy to attend to, so the sink would hide every other role); every
  score in the tooltip.
- ``induction-vs-previous``: the induction score on the probes against the previous-token
  score on the sentences, one point per head, sized by the head's mean update magnitude
  ``||u|| / ||x||`` (``impact_pooled``): the HeadVis view of the two halves of an
  induction circuit.
"""

from __future__ import annotations

import altair as alt
import numpy as np

from attnreport.analyses import sinks
from attnreport.charts.figure import Columns, Figure
from attnreport.charts.spec.assemble import build_figure
from attnreport.charts.spec.other_blocks import ordinal_layers
from attnreport.results import Manifest, SetResults

ATLAS_KEY = "head-atlas"
SCATTER_KEY = "induction-vs-previous"
ROLE_THRESHOLD = 0.3  # a head has a role when its strongest role score reaches this
# role name -> the score it is read from (``first_prob``: Gu et al.'s first-token score)
ROLES: dict[str, str] = {
    "previous token": "previous_token",
    "duplicate token": "duplicate_token",
    "induction": "induction",
    "first token (sink)": "first_prob",
}
NO_ROLE = "no role"
SCORES = (
    "previous_token", "previous_token_probe", "duplicate_token", "induction", "entropy",
    "entropy_normalised", "distance", "value_first_share", "first_prob", "magnitude",
)  # fmt: skip


def has_roles(set_results: SetResults) -> bool:
    return set_results.head_roles is not None


def role_rows(set_results: SetResults) -> Columns:
    """One row per (layer, head): every score, ``first_prob`` (pooled), ``magnitude``
    (``impact_pooled``) and ``role``, the strongest role or ``NO_ROLE``."""
    assert set_results.head_roles is not None
    roles = set_results.head_roles.arrays()
    first = sinks.pooled_scores(set_results.focus_by_sentence.arrays(), "first_prob")
    impact = set_results.impact_pooled.arrays()
    magnitude = {
        (int(a), int(b)): float(m)
        for a, b, m in zip(impact["layer"], impact["head"], impact["magnitude"], strict=True)
    }
    keys = list(zip(roles["layer"].tolist(), roles["head"].tolist(), strict=True))
    rows: dict[str, list] = {"layer": [k[0] for k in keys], "head": [k[1] for k in keys]}
    for name in SCORES[:-2]:
        rows[name] = [float(v) for v in roles[name]]
    rows["first_prob"] = [float(first.get(k, 0.0)) for k in keys]
    rows["magnitude"] = [magnitude.get(k, 0.0) for k in keys]
    names = list(ROLES)[:-1]  # the specific roles; the sink is the fallback
    table = np.array([rows[ROLES[name]] for name in names])  # (role, head)
    best = table.argmax(0)  # ties to the first role listed
    sink = list(ROLES)[-1]
    rows["role"] = [
        names[b] if table[b, i] >= ROLE_THRESHOLD
        else sink if rows["first_prob"][i] > sinks.EPS  # the one sink rule of Gu et al.
        else NO_ROLE
        for i, b in enumerate(best)
    ]  # fmt: skip
    return rows


def _tooltip() -> list[alt.Tooltip]:
    titles = {
        "previous_token": "previous-token (sentences)",
        "previous_token_probe": "previous-token (probes)",
        "duplicate_token": "duplicate-token",
        "induction": "induction (probes)",
        "entropy": "entropy (nats)",
        "entropy_normalised": "entropy / ln(i+1)",
        "distance": "mean distance (tokens)",
        "value_first_share": "value-weighted first-token share",
        "first_prob": "first-token probability",
        "magnitude": "update ||u|| / ||x||",
    }
    return [
        alt.Tooltip("layer:O", title="layer"),
        alt.Tooltip("head:O", title="head"),
        alt.Tooltip("role:N", title="strongest role"),
        *(alt.Tooltip(f"{name}:Q", title=titles[name], format=".3f") for name in SCORES),
    ]


def atlas_chart(key: str, manifest: Manifest | None = None) -> alt.Chart:
    """Layers (rows) x heads (columns), colour = role (nominal); a hybrid's blocks without
    attention are empty rows labelled "not attention" (``ordinal_layers``)."""
    domain = [*ROLES, NO_ROLE]
    colours = ["#1f77b4", "#2ca02c", "#d62728", "#9467bd", "#e8e8e8"]
    return (
        alt.Chart(alt.Data(name=key))
        .mark_rect(stroke="white", strokeWidth=1)
        .encode(
            x=alt.X("head:O", title="head"),
            y=alt.Y("layer:O", title="layer", **ordinal_layers(manifest)),
            color=alt.Color(
                "role:N",
                scale=alt.Scale(domain=domain, range=colours),
                legend=alt.Legend(title="strongest role", orient="bottom"),
            ),
            tooltip=_tooltip(),
        )
        .properties(title="Head atlas: each head's strongest role", width=360, height=520)
    )


def scatter_chart(key: str) -> alt.Chart:
    """Induction (probes) against previous-token (sentences), size = update magnitude."""
    unit = alt.Scale(domain=[0, 1])
    tenths = alt.Axis(values=[i / 10 for i in range(11)], format=".1f")  # a label per 0.1
    return (
        alt.Chart(alt.Data(name=key))
        .mark_circle(opacity=0.7)
        .encode(
            x=alt.X(
                "previous_token:Q",
                title="previous-token score (sentences)",
                scale=unit,
                axis=tenths,
            ),
            y=alt.Y("induction:Q", title="induction score (probes)", scale=unit, axis=tenths),
            size=alt.Size("magnitude:Q", title="update ||u|| / ||x||"),
            color=alt.Color("layer:Q", title="layer", scale=alt.Scale(scheme="viridis")),
            tooltip=_tooltip(),
        )
        .properties(title="Induction against previous-token score, per head", width=480, height=360)
    )


def atlas_figure(set_results: SetResults, manifest: Manifest | None = None) -> Figure:
    """The head atlas of the index."""
    caption = (
        "Every head of every layer, coloured by its strongest role: the largest of its "
        "previous-token score (mean weight on the token just before, over the sentences), "
        "duplicate-token score (weight on earlier copies of the current token) and induction "
        "score (on 10 probes of 50 random tokens repeated twice: weight on the token after "
        f"the earlier copy) when it reaches {ROLE_THRESHOLD:g}; otherwise first token (sink) "
        f"when its first-token probability (Gu et al.'s sink score) is above {sinks.EPS:g}; "
        "grey heads are neither. The tooltip gives every "
        "score, the entropy, the mean attention distance and the value-weighted first-token "
        "share (Kobayashi et al. 2020)."
    )
    return build_figure(
        key=ATLAS_KEY, title="Head atlas", caption=caption, chart=atlas_chart(ATLAS_KEY, manifest),
        rows=role_rows(set_results),
    )  # fmt: skip


def scatter_figure(set_results: SetResults) -> Figure:
    """Induction against previous-token score, sized by head impact."""
    caption = (
        "One point per head: its induction score on the probes against its previous-token "
        "score on the sentences, sized by its mean update magnitude ||u|| / ||x|| over the "
        "set. An induction circuit needs both: a previous-token head in an earlier layer "
        "and an induction head after it (Elhage et al. 2021; Olsson et al. 2022)."
    )
    return build_figure(
        key=SCATTER_KEY, title="Induction and previous-token heads", caption=caption,
        chart=scatter_chart(SCATTER_KEY), rows=role_rows(set_results),
    )  # fmt: skip
