"""Every head drawn on the index links to the sentence page that shows it best (issue 40).

Hand-made set tables of three sentences, one layer of four heads (a previous-token head,
an induction head, a sink and a head without a role); the pages chosen are a subset, so
the best sentence overall may have no page. The answers are read off the tables by hand.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from attnreport.charts.figures.head_roles import atlas_figure, scatter_figure
from attnreport.charts.figures.links import best_by_role, best_sentences, href, with_links
from attnreport.charts.figures.sink_rate import sink_rate_figure
from attnreport.charts.registry import FIGURES, Inputs, place
from attnreport.results import FocusBySentenceTable
from attnreport.results.roles import HeadRolesBySentenceTable
from tests.fixtures.fake_results import fake_study, typed
from tests.test_role_site import role_set

# per sentence (rows) and head (columns)
PREVIOUS = [[0.70, 0.05, 0.01, 0.10], [0.90, 0.05, 0.01, 0.10], [0.60, 0.05, 0.01, 0.10]]
FIRST_PROB = [[0.05, 0.10, 0.95, 0.20], [0.05, 0.10, 0.80, 0.20], [0.05, 0.10, 0.90, 0.20]]
CONCENTRATION = [[0.10, 0.30, 0.50, 0.40], [0.20, 0.60, 0.50, 0.45], [0.30, 0.60, 0.50, 0.20]]
PAGES = ((0, "s000-a.html"), (2, "s002-c.html"))  # sentence 1 has no page


def linked_set():
    """``role_set``'s roles, with three sentences of per-sentence scores."""
    n = 3 * 4
    sentence, head = np.repeat([0, 1, 2], 4), np.tile(np.arange(4), 3)
    layer, zeros = np.zeros(n, int), np.zeros(n)
    focus = FocusBySentenceTable(
        sentence=sentence, layer=layer, head=head, self_focus=zeros, first_focus=zeros,
        concentration=np.ravel(CONCENTRATION), n_queries=np.full(n, 5),
        first_prob=np.ravel(FIRST_PROB), sink_share=zeros,
    )  # fmt: skip
    roles = HeadRolesBySentenceTable(
        sentence=sentence, layer=layer, head=head, previous_token=np.ravel(PREVIOUS),
        duplicate_token=zeros, entropy=zeros + 1, entropy_normalised=zeros + 1,
        distance=zeros + 1, value_first_share=zeros, n_queries=np.full(n, 5),
        n_first=np.full(n, 5), n_duplicate=np.zeros(n, int), duplicate_weight=zeros,
    )  # fmt: skip
    planted = role_set()
    return replace(
        typed(fake_study(3, n_layers=1, n_heads=4)).set, head_roles=planted.head_roles,
        head_roles_by_sentence=roles, focus_by_sentence=focus, impact_pooled=planted.impact_pooled,
    )  # fmt: skip


def test_the_best_page_is_the_highest_score_among_sentences_with_a_page():
    best = best_sentences(linked_set(), "previous_token", PAGES)
    # head 0 peaks on sentence 1 (0.90), which has no page: sentence 0 (0.70) beats 2 (0.60)
    assert best[(0, 0)] == (0, "previous_token", 0.70)
    # head 1 ties at 0.05 everywhere: the first sentence
    assert best[(0, 1)][0] == 0
    assert best_sentences(linked_set(), "concentration", PAGES)[(0, 1)] == (
        2,
        "concentration",
        0.60,
    )
    assert best_sentences(linked_set(), "previous_token", ()) == {}


def test_a_head_links_by_its_role():
    roles = {
        (0, 0): "previous token",
        (0, 1): "induction",
        (0, 2): "first token (sink)",
        (0, 3): "no role",
    }
    best = best_by_role(linked_set(), roles, PAGES)
    assert best[(0, 0)] == (0, "previous_token", 0.70)
    assert best[(0, 1)] == (2, "concentration", 0.60)  # induction: no sentence score
    assert best[(0, 2)] == (0, "first_prob", 0.95)
    assert best[(0, 3)] == (0, "concentration", 0.40)


def test_linked_rows_open_the_page_at_the_head_and_say_so():
    rows = {"layer": [0, 0], "head": [0, 2], "value": [1.0, 2.0]}
    best = best_by_role(linked_set(), {(0, 0): "previous token", (0, 2): "no role"}, PAGES)
    out = with_links(rows, best, PAGES)
    assert out["href"] == ["s000-a.html#layer=0&head=0", "s000-a.html#layer=0&head=2"]
    assert href("p.html", 3, 1) == "p.html#layer=3&head=1"
    assert "sentence 0" in out["opens"][0] and "previous-token score" in out["opens"][0]
    assert "0.70" in out["opens"][0] and "2 sentences with a page" in out["opens"][0]
    assert with_links(rows, {}, PAGES) is rows  # nothing to link: the rows as they were


EVIDENCE = ("split-updates", "first-token-bos", "value-norms", "massive-activations")


def test_every_index_figure_links_every_head_it_draws_when_pages_exist():
    results = replace(typed(fake_study(3, n_layers=1, n_heads=4)), set=linked_set())
    # the figures that draw heads (the claims' evidence figures draw layers)
    index = [e for e in FIGURES if e.page == "index" and e.key not in EVIDENCE]
    assert len(index) == 7
    for entry in index:
        linked = place(entry, Inputs(results, pages=PAGES)).figure
        plain = place(entry, Inputs(results)).figure
        assert "href" not in plain.inline and "click" not in plain.caption, entry.key
        hrefs = linked.inline["href"]
        assert hrefs and all(h.startswith(("s000-a.html#", "s002-c.html#")) for h in hrefs)
        assert "Click" in linked.caption, entry.key
        tips = str(linked.spec)
        assert "click opens" in tips and "'cursor': 'pointer'" in tips, entry.key


def test_the_sink_chart_opens_each_layer_at_its_strongest_sink_head():
    figure = sink_rate_figure(linked_set(), typed(fake_study(1)).manifest, pages=PAGES)
    assert set(figure.inline["head"]) == {2}  # the sink head, on both measures' rows
    assert set(figure.inline["href"]) == {"s000-a.html#layer=0&head=2"}  # 0.95 > 0.90


def test_the_role_figures_link_the_same_page_per_head():
    atlas = atlas_figure(linked_set(), pages=PAGES).inline
    scatter = scatter_figure(linked_set(), PAGES).inline
    assert atlas["href"] == scatter["href"]
    assert len(set(atlas["href"])) == 4
