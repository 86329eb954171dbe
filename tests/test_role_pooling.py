"""Head roles pooled over a set: exact, the same in any corpus split, and in the results."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
import torch

from attnreport.analyses.probes import massive_activation_row, probe_table
from attnreport.analyses.role_pooling import RoleTotals
from attnreport.analyses.roles import roles_of_probs
from attnreport.analyses.tables import concat_tables
from attnreport.corpus.partial import SentencePartial, SetPartial

PATTERNS: dict[tuple[int, int], tuple[torch.Tensor, torch.Tensor]] = {}  # -> (probs, ids)


def sentence_tables(seed: int, n: int, layers: int = 2, heads: int = 3):
    """A random sentence's head_roles and massive_activations over ``layers`` layers (its
    patterns and token ids kept in ``PATTERNS``)."""
    gen = torch.Generator().manual_seed(seed)
    allowed = torch.ones(n, n, dtype=torch.bool).tril()
    roles, massive = [], []
    for layer in range(layers):
        scores = torch.randn(heads, n, n, generator=gen).masked_fill(~allowed, -torch.inf)
        ids = torch.randint(0, 3, (n,), generator=gen)
        norms = torch.rand(heads, n, generator=gen, dtype=torch.float64)
        PATTERNS[seed, layer] = (torch.softmax(scores, -1), ids)
        roles.append(roles_of_probs(layer, PATTERNS[seed, layer][0], allowed, ids, norms))
        massive.append(massive_activation_row(layer, torch.randn(n, 8, generator=gen) * (seed + 1)))
    return concat_tables(roles), concat_tables(massive)


def probe(layers: int = 2, heads: int = 3):
    rng = np.random.default_rng(5)
    return probe_table([[(rng.random(heads), rng.random(heads)) for _ in range(layers)]])


SENTENCES = {i: sentence_tables(i, n) for i, n in enumerate((2, 5, 9, 1, 7))}


def one_pass() -> dict:
    totals = RoleTotals()
    for index, (roles, massive) in SENTENCES.items():
        totals.add(index, roles, massive)
    return totals.tables(probe())


def assert_identical(a: dict, b: dict) -> None:
    assert list(a) == list(b)
    for name in a:
        assert list(a[name]) == list(b[name])
        for column in a[name]:
            np.testing.assert_array_equal(a[name][column], b[name][column], err_msg=column)


@pytest.mark.parametrize("cut", [1, 2, 4])
def test_any_split_and_order_merges_to_the_one_pass_tables(cut):
    order = [3, 0, 4, 1, 2]
    parts = [RoleTotals(), RoleTotals()]
    for k, index in enumerate(order):
        parts[k >= cut].add(index, *SENTENCES[index])
    parts[1].merge(parts[0])
    assert_identical(parts[1].tables(probe()), one_pass())


def test_pooled_scores_are_the_scores_over_every_query_of_the_set():
    tables = one_pass()
    by = tables["head_roles_by_sentence"]
    row = (by["layer"] == 1) & (by["head"] == 2)
    for score, weight in (
        ("previous_token", "n_previous"),
        ("entropy", "n_queries"),
        ("value_first_share", "n_first"),
        ("duplicate_token", "duplicate_weight"),
    ):
        expected = (by[score][row] * by[weight][row]).sum() / by[weight][row].sum()
        pooled = tables["head_roles"][score][5]  # (layer 1, head 2)
        assert pooled == pytest.approx(expected, rel=1e-12), score
    assert tables["head_roles"]["induction"].tolist() == probe()["induction"].tolist()
    assert by["sentence"].tolist()[:6] == [0] * 6


def test_the_set_previous_token_score_and_counts_are_over_every_counted_query_at_once():
    """Recomputed from the patterns themselves: the weight on the previous token over
    every query i >= 2 of every sentence, and the number of queries whose token repeats."""
    tables = one_pass()["head_roles"]
    for k, (layer, head) in enumerate(itertools.product(range(2), range(3))):
        weights, repeats = [], 0
        for seed in SENTENCES:
            p, ids = PATTERNS[seed, layer]
            weights += [float(p[head, i, i - 1]) for i in range(2, p.shape[1])]
            repeats += sum(int(ids[i]) in ids[:i].tolist() for i in range(1, p.shape[1]))
        assert tables["previous_token"][k] == pytest.approx(np.mean(weights), rel=1e-12)
        assert (
            tables["n_previous"][k] == len(weights) == sum(max(n - 2, 0) for n in (2, 5, 9, 1, 7))
        )
        assert tables["n_duplicate"][k] == repeats


def test_the_set_massive_activation_is_the_largest_of_its_layer():
    tables = one_pass()["massive_activations"]
    assert tables["layer"].tolist() == [0, 1]
    for k, layer in enumerate((0, 1)):
        candidates = {i: abs(float(m["value"][layer])) for i, (_, m) in SENTENCES.items()}
        best = max(candidates, key=lambda i: (candidates[i], -i))
        assert tables["sentence"][k] == best
        assert tables["value"][k] == SENTENCES[best][1]["value"][layer]


def test_a_sentence_is_never_counted_twice_and_rows_must_agree():
    totals = RoleTotals()
    totals.add(0, *SENTENCES[0])
    with pytest.raises(ValueError, match="twice"):
        totals.add(0, *SENTENCES[0])
    totals.add(1, *sentence_tables(1, 4, heads=2))
    with pytest.raises(ValueError, match="disagree"):
        totals.tables(probe())


def test_corpus_partials_carry_the_roles_through_json_and_merge_in_any_split():
    def partial(index):
        roles, massive = SENTENCES[index]
        n_rows = len(roles["head"])
        focus = {
            "layer": roles["layer"], "head": roles["head"], "self_focus": np.zeros(n_rows),
            "first_focus": np.zeros(n_rows), "concentration": np.zeros(n_rows),
            "n_queries": roles["n_queries"],
        }  # fmt: skip
        impact = {
            "layer": roles["layer"], "head": roles["head"], "query": np.zeros(n_rows, int),
            "magnitude": np.ones(n_rows), "orientation": np.zeros(n_rows),
        }  # fmt: skip
        made = SentencePartial.of(index, focus, impact, roles, massive)
        return SentencePartial.from_json(made.to_json())  # as --resume reads it back

    expected = one_pass()
    for first in itertools.combinations(range(5), 2):
        a, b = SetPartial(), SetPartial()
        for index in range(5):
            (a if index in first else b).add(partial(index))
        b.merge(a)
        assert b.has_roles()
        assert_identical(b.roles.tables(probe()), expected)


def test_partials_written_before_the_roles_have_none():
    focus = {"layer": np.array([0]), "head": np.array([0]), "n_queries": np.array([3])}
    for name in ("self_focus", "first_focus", "concentration"):
        focus[name] = np.array([0.5])
    impact = {
        "layer": np.array([0]), "head": np.array([0]), "query": np.array([0]),
        "magnitude": np.array([1.0]), "orientation": np.array([0.0]),
    }  # fmt: skip
    old = SentencePartial.of(0, focus, impact).to_json()
    assert "roles" not in old
    totals = SetPartial()
    totals.add(SentencePartial.from_json(old))
    assert not totals.has_roles()


def test_set_results_round_trip_with_the_roles_and_load_without_them():
    from attnreport.results.types import set_from_json, set_to_json
    from attnreport.study import ProbeResult, with_roles

    totals = RoleTotals()
    for index, (roles, massive) in SENTENCES.items():
        totals.add(index, roles, massive)
    probes = [[3, 1, 4, 3, 1, 4], [2, 7, 2, 7]]
    plain = set_from_json(json_of_empty_set())
    assert plain.head_roles is None and plain.probes is None
    assert "head_roles" not in set_to_json(plain)["tables"] and "probes" not in set_to_json(plain)
    full = with_roles(plain, totals, ProbeResult(probes, probe()))
    written = json.loads(json.dumps(set_to_json(full)))
    back = set_from_json(written)
    assert back.probes == ((3, 1, 4, 3, 1, 4), (2, 7, 2, 7))
    assert list(written["tables"]) == [
        "focus_by_sentence", "focus_pooled", "focus_sorted", "impact_pooled", "head_roles",
        "head_roles_by_sentence", "massive_activations", "massive_by_sentence",
    ]  # fmt: skip
    np.testing.assert_allclose(back.head_roles.induction, probe()["induction"], rtol=1e-5)
    assert back.massive_activations.sentence.tolist() == full.massive_activations.sentence.tolist()
    assert set_to_json(back) == written


def json_of_empty_set() -> dict:
    """A version-4 ``set.json`` (no head roles) of one sentence, one head."""
    from attnreport.results import tables as rt

    def table(kind, **values):
        return kind(**values).to_json()

    one, f = [0], [0.5]
    stats = ["self_focus", "first_focus", "concentration"]
    return {
        "schema": "attnreport.results/4",
        "tables": {
            "focus_by_sentence": table(
                rt.FocusBySentenceTable, sentence=one, layer=one, head=one, self_focus=f,
                first_focus=f, concentration=f, n_queries=[3],
            ),
            "focus_pooled": table(
                rt.FocusPooledTable, layer=one * 3, head=one * 3, statistic=stats, value=f * 3,
                min=f * 3, q1=f * 3, median=f * 3, q3=f * 3, max=f * 3, n_sentences=[1] * 3,
            ),
            "focus_sorted": table(
                rt.PooledSortedTable, statistic=stats, layer=one * 3, line=one * 3, head=one * 3,
                value=f * 3, min=f * 3, max=f * 3,
            ),
            "impact_pooled": table(
                rt.ImpactPooledTable, layer=one, head=one, magnitude=f, orientation=f, n_tokens=[3]
            ),
        },
    }  # fmt: skip
