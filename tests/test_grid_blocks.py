"""Long inputs in the intervention grids are drawn in blocks of tokens (charts/grid_blocks)."""

from __future__ import annotations

import json
import math

import pytest

from attnreport.charts.export.embed import figure_payload
from attnreport.charts.figures.grid_blocks import (
    GRID_TOKENS,
    block_kl,
    block_labels,
    block_shares,
    blocks_for,
)
from attnreport.charts.figures.interventions import scaling_figure
from attnreport.charts.figures.mean_grids import mean_figure
from tests.fixtures.fake_results import fake_study, typed


def test_short_inputs_are_not_blocked_and_long_ones_fit_the_limit():
    assert not blocks_for(GRID_TOKENS).blocked
    assert blocks_for(GRID_TOKENS + 1).size == 2
    for n in (65, 130, 256, 512, 8192):
        blocks = blocks_for(n)
        assert blocks.count <= GRID_TOKENS < math.ceil(n / (blocks.size - 1))


def test_block_shares_sum_over_targets_and_average_over_current_tokens():
    """Four positions in blocks of two; the window of 2 masks (2, 0), (3, 0), (3, 1)."""
    triangle = [[1.0], [0.5, 0.5], [None, 0.25, 0.75], [None, None, 0.5, 0.5]]
    blocks = blocks_for(4, limit=2)
    assert blocks.size == 2
    query, key, value = block_shares(triangle, blocks)
    assert (query, key) == ([0, 1, 1], [0, 0, 1])
    # block (0, 0): query 0 gives 1.0, query 1 gives 0.5 + 0.5; block (1, 0): query 2
    # gives 0.25 (its key 0 is masked), query 3 nothing; block (1, 1): 0.75 and 0.5 + 0.5
    assert value == pytest.approx([1.0, 0.125, 0.875])
    assert value[1] + value[2] == pytest.approx(1.0)  # a row of blocks holds all attention
    # a sink keeps its full column: every query gives key 0 most of its weight
    sink = [[1.0], [0.9, 0.1], [0.9, 0.05, 0.05], [0.9, 0.04, 0.03, 0.03]]
    _, _, shares = block_shares(sink, blocks)
    assert shares[1] == pytest.approx(0.945)  # (0.9 + 0.05 + 0.9 + 0.04) / 2
    assert block_kl([0.0, 1.0, 2.0, 4.0], blocks) == [0.5, 3.0]
    assert block_labels(["a", " b", " c", " d"], blocks) == ["0-1: a b", "2-3: c d"]


@pytest.fixture(scope="module")
def long_study():
    """Sentence 0 of 130 tokens: the scaling grid and the first mean-grid row are blocked
    (blocks of 5), the other two inputs (131, 132 tokens) too."""
    return typed(fake_study(3, n_layers=2, n_heads=2, n_tokens=130))


def test_a_long_scaling_grid_draws_blocks_and_says_so(long_study):
    s0 = long_study.sentences[0]
    fig = scaling_figure(long_study.interventions, s0, long_study.manifest, long_study.sentences)
    assert blocks_for(130).size == 5
    count = math.ceil(130 / 5)
    assert max(fig.inline["query"]) == count - 1 and max(fig.inline["key"]) == count - 1
    # every block pair of eight cells (the unmodified run and three factors for each of
    # Q or K, and V), one head
    cells = 8 * count * (count + 1) // 2
    assert len(fig.inline["query"]) == cells
    assert "in blocks of 5 tokens" in fig.caption and "all 130 positions" in fig.caption
    params = {p["name"]: p.get("value") for p in fig.spec["params"]}
    labels = params["tokens"]
    assert len(labels) == count and labels[0].startswith("0-4: ")
    # the first cell (Q, unmodified) is the baseline run; its block (0, 0) of head h: the
    # weights of queries 0-4 on keys 0-4, summed, over the five queries
    head = fig.inline["head"][0]
    assert (fig.inline["target"][0], fig.inline["eps"][0]) == ("Q or K", "unmodified")
    tri = long_study.interventions.scaling.baseline["same"][head]
    expected = math.fsum(tri[q][k] for q in range(5) for k in range(q + 1)) / 5
    assert fig.inline["prob"][0] == pytest.approx(expected, abs=1e-4)


def test_a_long_grid_page_stays_small(long_study):
    """Blocked, a page's grid payload is what a 26-token input's would be."""
    s0 = long_study.sentences[0]
    iv, manifest, sentences = long_study.interventions, long_study.manifest, long_study.sentences
    for fig in (
        scaling_figure(iv, s0, manifest, sentences),
        mean_figure(iv, s0, manifest, sentences),
    ):
        assert len(json.dumps(figure_payload(fig))) < 400_000
        assert "in blocks of 5 tokens" in fig.caption
