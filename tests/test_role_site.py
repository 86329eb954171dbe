"""The head-role figures and findings, on hand-made head-role tables."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from attnreport.analyses.role_rules import MIN_REPEATS
from attnreport.charts.figures.head_roles import NO_ROLE, atlas_figure, role_rows, scatter_figure
from attnreport.charts.registry import FIGURES, Inputs
from attnreport.results import FocusBySentenceTable, ImpactPooledTable
from attnreport.results.roles import HeadRolesBySentenceTable, HeadRolesSetTable
from attnreport.results.types import set_to_json
from attnreport.site.words.role_findings import role_findings
from tests.fixtures.fake_results import fake_study, typed

# one layer, four heads: a previous-token head, an induction head, a sink, and nothing
PREV = [0.8, 0.05, 0.01, 0.1]
INDUCTION = [0.02, 0.9, 0.0, 0.1]
FIRST_PROB = [0.05, 0.1, 0.95, 0.2]
SHARE = [0.02, 0.05, 0.4, 0.2]
MAGNITUDE = [0.2, 0.3, 0.01, 0.1]


def role_set(duplicate=(0.0,) * 4, repeats: int = 0):
    """The four planted heads over two sentences; ``duplicate``: the heads' pooled
    duplicate-token scores, over ``repeats`` repeated-token queries of the set."""
    n, zeros, layer, head = 4, np.zeros(4), np.zeros(4, int), np.arange(4)
    roles = HeadRolesSetTable(
        layer=layer, head=head, previous_token=PREV, previous_token_probe=PREV,
        duplicate_token=duplicate, induction=INDUCTION, entropy=zeros + 1.0,
        entropy_normalised=zeros + 0.5, distance=zeros + 2.0, value_first_share=SHARE,
        n_previous=np.full(n, 8), n_duplicate=np.full(n, repeats),
    )  # fmt: skip
    by_sentence = HeadRolesBySentenceTable(
        sentence=np.repeat([0, 1], n), layer=np.tile(layer, 2), head=np.tile(head, 2),
        previous_token=[0.7, 0.05, 0.01, 0.1, 0.9, 0.05, 0.01, 0.1], duplicate_token=np.zeros(8),
        entropy=np.ones(8), entropy_normalised=np.ones(8), distance=np.ones(8),
        value_first_share=np.tile(SHARE, 2), n_queries=np.full(8, 5), n_first=np.full(8, 5),
        n_duplicate=np.full(8, repeats // 2), duplicate_weight=np.full(8, repeats / 2),
        n_previous=np.full(8, 4),
    )  # fmt: skip
    focus = FocusBySentenceTable(
        sentence=np.zeros(n, int), layer=layer, head=head, self_focus=zeros, first_focus=zeros,
        concentration=zeros, n_queries=np.full(n, 5), first_prob=FIRST_PROB, sink_share=zeros,
    )  # fmt: skip
    impact = ImpactPooledTable(
        layer=layer, head=head, magnitude=MAGNITUDE, orientation=zeros, n_tokens=np.full(n, 6)
    )
    base = typed(fake_study(1)).set
    return replace(
        base, head_roles=roles, head_roles_by_sentence=by_sentence, focus_by_sentence=focus,
        impact_pooled=impact,
    )  # fmt: skip


def test_each_head_gets_its_strongest_role_or_none():
    rows = role_rows(role_set())
    assert rows["role"] == ["previous token", "induction", "first token (sink)", NO_ROLE]
    assert rows["first_prob"] == FIRST_PROB and rows["magnitude"] == MAGNITUDE


def test_a_duplicate_token_role_needs_enough_repeated_token_queries():
    """Head 3's duplicate-token score (0.8) beats its other scores; it is its role only
    when the set has ``MIN_REPEATS`` queries whose token occurred earlier."""
    strong = (0.0, 0.0, 0.0, 0.8)
    few = role_rows(role_set(strong, repeats=MIN_REPEATS - 1))
    assert few["role"][3] == NO_ROLE and few["n_duplicate"] == [MIN_REPEATS - 1] * 4
    enough = role_rows(role_set(strong, repeats=MIN_REPEATS))
    assert enough["role"] == [
        "previous token",
        "induction",
        "first token (sink)",
        "duplicate token",
    ]
    caption = atlas_figure(role_set(strong, repeats=13)).caption
    assert (
        f"the set has only 13 queries whose token occurred earlier, fewer than the {MIN_REPEATS}"
        in caption
    )
    caption = atlas_figure(role_set(strong, repeats=40)).caption
    assert "over the 40 queries of the set whose token occurred earlier" in caption


def test_older_results_are_counted_from_their_sentences_and_say_what_they_measured():
    """A folder of schema 8 has no set counts: n is summed from the sentences' rows, and the
    caption says its previous-token score counts the second token."""
    base = role_set((0.0, 0.0, 0.0, 0.8), repeats=60)
    older = replace(base, head_roles=replace(base.head_roles, n_previous=np.full(4, -1),
                                             n_duplicate=np.full(4, -1)))  # fmt: skip
    rows = role_rows(older)
    assert rows["n_duplicate"] == [60] * 4 and rows["role"][3] == "duplicate token"
    assert "schema 8 or older" in atlas_figure(older).caption
    assert "schema 8" not in atlas_figure(base).caption
    assert "from the third on" in atlas_figure(base).caption


def test_the_figures_carry_every_score_and_validate():
    for figure in (atlas_figure(role_set()), scatter_figure(role_set())):
        tooltip = [t["field"] for t in figure.spec["encoding"]["tooltip"]]
        for score in ("induction", "previous_token", "entropy", "value_first_share", "distance"):
            assert score in tooltip
        assert "n_duplicate" in tooltip and "previous_token_probe" in tooltip
        assert len(figure.inline["head"]) == 4
    assert figure.spec["encoding"]["size"]["field"] == "magnitude"
    # the scatter plots the probe score: on the sentences a sink head scored at query 1
    assert figure.spec["encoding"]["x"]["field"] == "previous_token_probe"


def test_the_figures_appear_only_with_head_roles():
    results = typed(fake_study(1))
    entries = [e for e in FIGURES if e.key in ("head-atlas", "induction-vs-previous")]
    assert len(entries) == 2
    assert not any(e.when(Inputs(results)) for e in entries)
    with_roles = replace(results, set=role_set())
    assert all(e.when(Inputs(with_roles)) for e in entries)


def test_findings_count_the_role_heads_and_give_their_spread():
    tables = set_to_json(role_set())["tables"]
    found = {f.key: f for f in role_findings(tables)}
    roles = found["role-heads"].text
    assert roles.startswith("1 head is an induction head (layer 0, head 1)")
    assert "repeated twice it puts 0.9 of its attention on the token after" in roles
    assert "range" not in roles.split(";")[0]  # no range over one head
    assert (
        "1 head is a previous-token head (layer 0, head 0), putting a median 0.80 (range "
        "0.70 to 0.90 over 2 sentences, too few for a 95% interval) of its attention" in roles
    )
    assert "strongest" not in roles and set(found) == {"role-heads"}


def test_no_role_findings_without_head_roles_or_strong_heads():
    plain = set_to_json(typed(fake_study(1)).set)["tables"]
    assert role_findings(plain) == []
    weak = role_set()
    roles = replace(weak.head_roles, induction=np.zeros(4), previous_token=np.zeros(4) + 0.1)
    text = role_findings(set_to_json(replace(weak, head_roles=roles))["tables"])[0].text
    assert text.startswith("No head reaches an induction score of 0.3")
    assert "previous-token" not in text


def test_the_sentence_line_counts_the_heads_active_on_it():
    from attnreport.results.roles import HeadRolesTable
    from attnreport.site.words.role_findings import active_roles

    def table(prev, dup, n_duplicate, n_previous=4):
        n = len(prev)
        return HeadRolesTable(
            layer=np.zeros(n, int), head=np.arange(n), previous_token=prev, duplicate_token=dup,
            entropy=np.ones(n), entropy_normalised=np.ones(n), distance=np.ones(n),
            value_first_share=np.zeros(n), n_queries=np.full(n, 6), n_first=np.full(n, 6),
            n_duplicate=np.full(n, n_duplicate), duplicate_weight=np.full(n, float(n_duplicate)),
            n_previous=np.full(n, n_previous),
        )  # fmt: skip

    text = active_roles(table([0.8, 0.4, 0.1], [0.0, 0.9, 0.2], MIN_REPEATS))
    assert text.startswith("On this sentence, 2 heads act as previous-token heads (median "
                           "score 0.6) and 1 head acts as duplicate-token")  # fmt: skip
    assert f"{MIN_REPEATS} tokens, punctuation included, repeat an earlier one" in text
    few = active_roles(table([0.8, 0.4, 0.1], [0.0, 0.9, 0.2], 2))
    assert "duplicate-token heads" not in few
    assert (
        f"only 2 tokens, punctuation included, repeat an earlier one, fewer than the {MIN_REPEATS}"
        in few
    )
    plain = active_roles(table([0.1, 0.2], [0.0, 0.0], 0))
    assert "no head reaches 0.3 as a previous-token head" in plain and "no token repeats" in plain
    assert "second token" not in plain
    older = active_roles(table([0.1, 0.2], [0.0, 0.0], 0, n_previous=-1))
    assert older.endswith(
        "count the second token in the previous-token score, though its "
        "previous token is the first, where sink heads attend."
    )
    assert active_roles(None) is None


def test_compare_says_in_one_line_when_the_previous_token_scores_differ_by_definition():
    from attnreport.results.compare import compare_results

    results = typed(fake_study(1))
    new = replace(results, set=role_set())
    older_roles = replace(new.set.head_roles, n_previous=np.full(4, -1), n_duplicate=np.full(4, -1))
    older = replace(results, set=replace(new.set, head_roles=older_roles))
    assert compare_results(new, new).ok
    found = compare_results(older, new)
    assert found.problems[0].startswith("set.json: one run scored previous-token heads over")
    assert found.problems[-1].endswith("nothing else compared") and len(found.problems) == 2
