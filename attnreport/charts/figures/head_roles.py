"""Index figures of the head roles (``set.json`` ``head_roles``, schema version 5).

- ``head-atlas``: a layers x heads grid, each cell coloured by the head's strongest role:
  the largest of its previous-token, duplicate-token and induction scores when that
  reaches ``ROLE_THRESHOLD`` (the duplicate-token score only where it rests on at least
  ``MIN_REPEATS`` repeated-token queries); else "first token (sink)" when it is a sink by
  Gu et al.'s measure, its first-token probability above ``sinks.EPS`` (most heads of a model with sinks park there, and on the sentences an
  induction head has no earlier copy to attend to, so the sink would hide every other
  role); every score in the tooltip, the duplicate-token score with its n.
- ``induction-vs-previous``: the induction score against the previous-token score, both
  on the probes of random tokens (on the sentences the previous token is often a
  predictable word, and a sink head scored on the first token before schema 9), one
  point per head, sized by the head's mean update magnitude ``||u|| / ||x||``
  (``impact_pooled``): the HeadVis view of the two halves of an induction circuit.

A click on a head opens the sentence page that shows its role best (``links``).
"""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import numpy as np

from attnreport.analyses import sinks
from attnreport.analyses.role_rules import MIN_REPEATS, ROLE_THRESHOLD, duplicate_counts
from attnreport.charts.figure import Columns, Figure
from attnreport.charts.figures.links import Pages, best_by_role, with_links
from attnreport.charts.spec.assemble import build_figure
from attnreport.charts.spec.common import link_cursor, link_tips
from attnreport.charts.spec.other_blocks import ordinal_layers
from attnreport.results import Manifest, SetResults
from attnreport.results.roles import counts_query_one

ATLAS_KEY = "head-atlas"
SCATTER_KEY = "induction-vs-previous"
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
COUNTS = ("n_duplicate",)  # the repeated-token queries the duplicate-token score reads


def has_roles(set_results: SetResults) -> bool:
    return set_results.head_roles is not None


def role_rows(set_results: SetResults) -> Columns:
    """One row per (layer, head): every score, ``first_prob`` (pooled), ``magnitude``
    (``impact_pooled``), ``n_duplicate`` and ``role``, the strongest role or ``NO_ROLE``
    (duplicate token only with ``MIN_REPEATS`` repeated-token queries or more)."""
    assert set_results.head_roles is not None
    roles = set_results.head_roles.arrays()
    by_sentence = set_results.head_roles_by_sentence
    repeats = duplicate_counts(roles, None if by_sentence is None else by_sentence.arrays())
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
    rows["n_duplicate"] = repeats.tolist()
    names = list(ROLES)[:-1]  # the specific roles; the sink is the fallback
    table = np.array([rows[ROLES[name]] for name in names])  # (role, head)
    table[names.index("duplicate token"), repeats < MIN_REPEATS] = -np.inf  # too few to say
    best = table.argmax(0)  # ties to the first role listed
    sink = list(ROLES)[-1]
    rows["role"] = [
        names[b] if table[b, i] >= ROLE_THRESHOLD
        else sink if rows["first_prob"][i] > sinks.EPS  # the one sink rule of Gu et al.
        else NO_ROLE
        for i, b in enumerate(best)
    ]  # fmt: skip
    return rows


def role_links(set_results: SetResults, rows: Columns, pages: Pages) -> Columns:
    """``rows`` (a row per head: ``layer``, ``head``) linked to the page of ``pages`` that
    shows each head's role best (``links.best_by_role``; a set without head roles: where
    its attention is most concentrated)."""
    table = role_rows(set_results) if has_roles(set_results) else {"layer": [], "head": []}
    keys = zip(table["layer"], table["head"], strict=True)
    roles = dict(zip(keys, table.get("role", []), strict=True))
    heads = zip(rows["layer"], rows["head"], strict=True)
    wanted = {(int(a), int(b)): roles.get((int(a), int(b)), NO_ROLE) for a, b in heads}
    return with_links(rows, best_by_role(set_results, wanted, pages), pages)


LINK_CAPTION = (
    " Click a head to open it on the sentence page, of the {pages} with one, that shows its "
    "role best: where its previous-token or duplicate-token score or, for a sink, its "
    "first-token probability is highest; for an induction head (scored on the probes) or a "
    "head without a role, where its attention is most concentrated."
)


def link_caption(rows: Columns, pages: Pages) -> str:
    """The caption sentence saying where a click on a head of ``rows`` goes ("" unlinked)."""
    return LINK_CAPTION.format(pages=len(pages)) if "href" in rows else ""


def _tooltip() -> list[alt.Tooltip]:
    titles = {
        "previous_token": "previous-token (sentences)",
        "previous_token_probe": "previous-token (probes)",
        "duplicate_token": "duplicate-token",
        "n_duplicate": "repeated-token queries (n)",
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
        *(alt.Tooltip(f"{name}:Q", title=titles[name], format="d") for name in COUNTS),
    ]


def atlas_chart(
    key: str, manifest: Manifest | None = None, rows: Columns | None = None
) -> alt.Chart:
    """Layers (rows) x heads (columns), colour = role (nominal); a hybrid's blocks without
    attention are empty rows labelled "not attention" (``ordinal_layers``); the heads of
    linked ``rows`` say so."""
    rows = rows or {}
    domain = [*ROLES, NO_ROLE]
    colours = ["#1f77b4", "#2ca02c", "#d62728", "#9467bd", "#e8e8e8"]
    return (
        alt.Chart(alt.Data(name=key))
        .mark_rect(stroke="white", strokeWidth=1, **link_cursor(rows))
        .encode(
            x=alt.X("head:O", title="head"),
            y=alt.Y("layer:O", title="layer", **ordinal_layers(manifest)),
            color=alt.Color(
                "role:N",
                scale=alt.Scale(domain=domain, range=colours),
                legend=alt.Legend(title="strongest role", orient="bottom"),
            ),
            tooltip=_tooltip() + link_tips(rows),
        )
        .properties(title="Head atlas: each head's strongest role", width=360, height=520)
    )


def scatter_chart(key: str, rows: Columns | None = None) -> alt.Chart:
    """Induction against previous-token score, both on the probes; size = update
    magnitude; the heads of linked ``rows`` say so."""
    rows = rows or {}
    unit = alt.Scale(domain=[0, 1])
    tenths = alt.Axis(values=[i / 10 for i in range(11)], format=".1f")  # a label per 0.1
    return (
        alt.Chart(alt.Data(name=key))
        .mark_circle(opacity=0.7, **link_cursor(rows))
        .encode(
            x=alt.X(
                "previous_token_probe:Q",
                title="previous-token score (probes)",
                scale=unit,
                axis=tenths,
            ),
            y=alt.Y("induction:Q", title="induction score (probes)", scale=unit, axis=tenths),
            size=alt.Size("magnitude:Q", title="update ||u|| / ||x||"),
            color=alt.Color("layer:Q", title="layer", scale=alt.Scale(scheme="viridis")),
            tooltip=_tooltip() + link_tips(rows),
        )
        .properties(title="Induction against previous-token score, per head", width=480, height=360)
    )


def previous_words(set_results: SetResults) -> str:
    """What the sentences' previous-token score averages over, as these results took it."""
    assert set_results.head_roles is not None
    if counts_query_one(set_results.head_roles.arrays()):
        return (
            "mean weight on the token just before, over every sentence token but the first; "
            "these results, of schema 8 or older, count the second token too, whose previous "
            "token is the first, so a sink head scores there as a previous-token head"
        )
    return (
        "mean weight on the token just before, over the sentences' tokens from the third "
        "on: the second token's previous token is the first, where sink heads attend"
    )


def duplicate_words(repeats: Sequence[int]) -> str:
    """How many repeated-token queries the duplicate-token scores rest on, and whether
    that is enough to name the role (``MIN_REPEATS``)."""
    low, high = min(repeats, default=0), max(repeats, default=0)
    n = f"{low:,}" if low == high else f"{low:,}-{high:,}"
    if high < MIN_REPEATS:
        return (
            f"weight on earlier copies of the current token; the set has only {n} "
            f"{'query' if high == 1 else 'queries'} whose token occurred earlier, fewer than "
            f"the {MIN_REPEATS} this role needs, so no head is given it"
        )
    needs = (
        "" if low >= MIN_REPEATS else f"; a head is given the role only with {MIN_REPEATS} or more"
    )
    return f"weight on earlier copies of the current token, over the {n} queries of the set whose token occurred earlier{needs}"


def atlas_figure(
    set_results: SetResults, manifest: Manifest | None = None, pages: Pages = ()
) -> Figure:
    """The head atlas of the index, each head linked to a page of ``pages``."""
    rows = role_links(set_results, role_rows(set_results), pages)
    caption = (
        "Every head of every layer, coloured by its strongest role: the largest of its "
        f"previous-token score ({previous_words(set_results)}), duplicate-token score "
        f"({duplicate_words(rows['n_duplicate'])}) and induction "
        "score (on 10 probes of 50 random tokens repeated twice: weight on the token after "
        f"the earlier copy) when it reaches {ROLE_THRESHOLD:g}; otherwise first token (sink) "
        f"when its first-token probability (Gu et al.'s sink score) is above {sinks.EPS:g}; "
        "grey heads are neither. The tooltip gives every "
        "score, the entropy, the mean attention distance and the value-weighted first-token "
        "share (Kobayashi et al. 2020)."
    ) + link_caption(rows, pages)
    return build_figure(
        key=ATLAS_KEY, title="Head atlas", caption=caption,
        chart=atlas_chart(ATLAS_KEY, manifest, rows), rows=rows,
    )  # fmt: skip


def scatter_figure(set_results: SetResults, pages: Pages = ()) -> Figure:
    """Induction against previous-token score on the probes, sized by head impact, each
    head linked to a page of ``pages``."""
    rows = role_links(set_results, role_rows(set_results), pages)
    caption = (
        "One point per head: its induction score against its previous-token score, both on "
        "the probes (10 sequences of 50 random tokens repeated twice, where the token just "
        "before is no guide to the next; the previous-token score leaves out the second "
        "token, whose previous token is the first), sized by its mean update magnitude "
        "||u|| / ||x|| over the sentences. An induction circuit needs both: a "
        "previous-token head in an earlier layer and an induction head after it (Elhage "
        "et al. 2021; Olsson et al. 2022). The tooltip also gives the previous-token score "
        "on the sentences."
    ) + link_caption(rows, pages)
    return build_figure(
        key=SCATTER_KEY, title="Induction and previous-token heads", caption=caption,
        chart=scatter_chart(SCATTER_KEY, rows), rows=rows,
    )  # fmt: skip
