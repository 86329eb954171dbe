"""Links from the index's figures to the sentence pages (issue 40: pick a head anywhere).

Every head drawn on the index opens the sentence page that shows it best, at
``#layer=L&head=H``: of the sentences that have a page (``Pages``, from the site: a large
set has pages for a few), the one where that head's score on the figure's measure is
highest (ties: the first such sentence). The rows of a linked figure get two columns:
``href`` (the page and its hash; the runtime opens it on a click, ``runtime_state.js``)
and ``opens`` (what the click opens and why, for the tooltip).

A measure is a column of a per-sentence table (``focus_by_sentence``,
``head_roles_by_sentence``); a head's *role* picks its own (``ROLE_MEASURES``): a
previous-token head opens where its previous-token score is highest, a sink where its
first-token probability is, and a head whose role no sentence measures (induction, scored
on probes) or that has none, where its attention is most concentrated.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from attnreport.charts.figure import Columns
from attnreport.results import SetResults

Pages = tuple[tuple[int, str], ...]  # (sentence index, its page's file beside the index)
Best = dict[tuple[int, int], tuple[int, str, float]]  # (layer, head) -> (sentence, measure, value)

# measure -> (per-sentence table of ``SetResults``, what the tooltip calls it)
MEASURES: dict[str, tuple[str, str]] = {
    "self_focus": ("focus_by_sentence", "self focus"),
    "first_focus": ("focus_by_sentence", "first-token focus"),
    "first_prob": ("focus_by_sentence", "first-token probability"),
    "concentration": ("focus_by_sentence", "concentration"),
    "previous_token": ("head_roles_by_sentence", "previous-token score"),
    "duplicate_token": ("head_roles_by_sentence", "duplicate-token score"),
}
# a head's role (``head_roles.ROLES`` and ``NO_ROLE``) -> the measure its link follows
ROLE_MEASURES = {
    "previous token": "previous_token",
    "duplicate token": "duplicate_token",
    "first token (sink)": "first_prob",
}
FALLBACK = "concentration"  # roles no sentence measures, and no role


def _table(set_results: SetResults, measure: str) -> dict[str, np.ndarray] | None:
    table = getattr(set_results, MEASURES[measure][0])
    return None if table is None else table.arrays()


def best_sentences(set_results: SetResults, measure: str, pages: Pages) -> Best:
    """(layer, head) -> (sentence, measure, value): the page's sentence where the head's
    ``measure`` is highest, for every head the measure's table has (none without pages
    or without the table)."""
    table = _table(set_results, measure)
    with_page = {index for index, _ in pages}
    if table is None or not with_page:
        return {}
    keep = np.isin(table["sentence"], sorted(with_page))
    sentence, layer, head = (table[k][keep] for k in ("sentence", "layer", "head"))
    value = table[measure][keep].astype(np.float64)
    order = np.lexsort((sentence, -value, head, layer))  # per head: highest, then first
    out: Best = {}
    for i in order.tolist():
        out.setdefault((int(layer[i]), int(head[i])), (int(sentence[i]), measure, float(value[i])))
    return out


def best_by_role(
    set_results: SetResults, roles: Mapping[tuple[int, int], str], pages: Pages
) -> Best:
    """(layer, head) -> the best sentence for the measure of the head's role in ``roles``."""
    measures = {ROLE_MEASURES.get(role, FALLBACK) for role in roles.values()}
    found = {m: best_sentences(set_results, m, pages) for m in sorted(measures)}
    fallback = found.get(FALLBACK) or best_sentences(set_results, FALLBACK, pages)
    out: Best = {}
    for key, role in roles.items():
        best = found[ROLE_MEASURES.get(role, FALLBACK)].get(key) or fallback.get(key)
        if best is not None:
            out[key] = best
    return out


def href(page: str, layer: int, head: int) -> str:
    """The page opened at ``layer`` and ``head`` (the runtime's hash)."""
    return f"{page}#layer={layer}&head={head}"


def with_links(rows: Columns, best: Best, pages: Pages) -> Columns:
    """``rows`` (columns ``layer`` and ``head``) with ``href`` and ``opens`` for the heads
    of ``best`` ("" for any other: its mark opens nothing); ``rows`` when none is linked."""
    if not best:
        return rows
    names = dict(pages)
    hrefs, opens = [], []
    for layer, head in zip(rows["layer"], rows["head"], strict=True):
        found = best.get((int(layer), int(head)))
        if found is None:
            hrefs.append("")
            opens.append("")
            continue
        sentence, measure, value = found
        hrefs.append(href(names[sentence], int(layer), int(head)))
        opens.append(
            f"sentence {sentence} at layer {layer}, head {head}: of the {len(pages)} sentences "
            f"with a page, where its {MEASURES[measure][1]} is highest ({value:.2f})"
        )
    return {**rows, "href": hrefs, "opens": opens}
