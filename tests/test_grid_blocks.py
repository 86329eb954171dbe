"""Long inputs in the intervention grids are drawn in blocks of tokens (charts/grid_blocks)."""

from __future__ import annotations

import json
import math

import pytest

from attnreport.charts.embed import figure_payload
from attnreport.charts.grid_blocks import (
    GRID_TOKENS,
    block_kl,
    block_labels,
    block_means,
    blocks_for,
)
from attnreport.charts.interventions import mean_figure, scaling_figure
from tests.fixtures.fake_results import fake_study, typed


def test_short_inputs_are_not_blocked_and_long_ones_fit_the_limit():
    assert not blocks_for(GRID_TOKENS).blocked
    assert blocks_for(GRID_TOKENS + 1).size == 2
    for n in (65, 130, 256, 512, 8192):
        blocks = blocks_for(n)
        assert blocks.count <= GRID_TOKENS < math.ceil(n / (blocks.size - 1))


def test_block_means_average_the_allowed_cells_of_each_block_pair():
    """Four positions in blocks of two; the window of 2 masks (2, 0), (3, 0), (3, 1)."""
    triangle = [[1.0], [0.5, 0.5], [None, 0.25, 0.75], [None, None, 0.5, 0.5]]
    blocks = blocks_for(4, limit=2)
    assert blocks.size == 2
    query, key, value = block_means(triangle, blocks)
    assert (query, key) == ([0, 1, 1], [0, 0, 1])
    # block (0, 0): (0,0) (1,0) (1,1); block (1, 0): only (2, 1) is allowed;
    # block (1, 1): (2,2) (3,2) (3,3)
    assert value == pytest.approx([2.0 / 3, 0.25, 1.75 / 3])
    assert block_kl([0.0, 1.0, 2.0, 4.0], blocks) == [0.5, 3.0]
    assert block_labels(["a", " b", " c", " d"], blocks) == ["0-1: a b", "2-3: c d"]


@pytest.fixture(scope="module")
def long_study():
    """Sentence 0 of 130 tokens: the scaling grid and the first mean-grid row are blocked
    (blocks of 3), the other two inputs (131, 132 tokens) too."""
    return typed(fake_study(3, n_layers=2, n_heads=2, n_tokens=130))


def test_a_long_scaling_grid_draws_blocks_and_says_so(long_study):
    s0 = long_study.sentences[0]
    fig = scaling_figure(long_study.interventions, s0, long_study.manifest, long_study.sentences)
    count = math.ceil(130 / 3)
    assert max(fig.inline["query"]) == count - 1 and max(fig.inline["key"]) == count - 1
    cells = 9 * count * (count + 1) // 2  # every block pair of nine cells, one head
    assert len(fig.inline["query"]) == cells
    assert "in blocks of 3 tokens" in fig.caption and "all 130 positions" in fig.caption
    params = {p["name"]: p.get("value") for p in fig.spec["params"]}
    labels = params["tokens"]
    assert len(labels) == count and labels[0].startswith("0-2: ")
    # the first cell's block (0, 0) of head h is the mean of its three allowed weights
    cell = long_study.interventions.scaling.cells[0]
    head = fig.inline["head"][0]
    tri = cell.observations["same"][head]
    expected = math.fsum([tri[0][0], tri[1][0], tri[1][1], tri[2][0], tri[2][1], tri[2][2]]) / 6
    assert fig.inline["prob"][0] == pytest.approx(expected, abs=1e-4)


def test_a_long_grid_page_stays_small(long_study):
    """Blocked, a page's grid payload is what a 43-token input's would be."""
    s0 = long_study.sentences[0]
    iv, manifest, sentences = long_study.interventions, long_study.manifest, long_study.sentences
    for fig in (
        scaling_figure(iv, s0, manifest, sentences),
        mean_figure(iv, s0, manifest, sentences),
    ):
        assert len(json.dumps(figure_payload(fig))) < 400_000
        assert "in blocks of 3 tokens" in fig.caption
