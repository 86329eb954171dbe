"""The mean grids (charts/figures/mean_grids): the unmodified column and the grid of the
mean taken before the rotary rotation."""

from __future__ import annotations

import pytest

from attnreport.charts.figures.mean_grids import mean_before_rotation_figure, mean_figure
from attnreport.charts.registry import build_figures, page_inputs
from tests.fixtures.fake_results import fake_study, typed


@pytest.fixture(scope="module")
def rope():
    return typed(fake_study(3, n_layers=3, n_heads=2, positional="rope"))


def _cell(fig, sentence: int, target: str, head: int, observation: str) -> dict:
    """(query, key) -> prob of one drawn cell, from every row of the figure (its chunks:
    the inline rows are a part of the default chunk)."""
    rows = {name: [] for name in fig.inline}
    for chunk in fig.chunks.values():
        for name in rows:
            rows[name] += chunk[name]
    for name in rows:
        rows[name] += fig.inline[name]
    out = {}
    for i in range(len(rows["query"])):
        if (rows["sentence"][i], rows["target"][i], rows["head"][i], rows["observation"][i]) == (
            sentence, target, head, observation,
        ):  # fmt: skip
            out[(rows["query"][i], rows["key"][i])] = rows["prob"][i]
    return out


def _triangle(triangle) -> dict:
    return {(q, k): p for q, row in enumerate(triangle) for k, p in enumerate(row)}


@pytest.mark.parametrize("observation", ["same", "next", "last"])
def test_the_mean_grid_draws_each_inputs_unmodified_run_beside_its_cells(rope, observation):
    iv = rope.interventions
    fig = mean_figure(iv, rope.sentences[0], rope.manifest, rope.sentences)
    for i in iv.mean.sentences:
        for head in (0, 1):
            base = _triangle(iv.mean.baselines[i][observation][head])
            assert _cell(fig, i, "unmodified", head, observation) == pytest.approx(
                base, abs=5.001e-5
            )
            for cell in (c for c in iv.mean.cells if c.setting == i):
                drawn = _cell(fig, i, cell.target, head, observation)
                want = _triangle(cell.observations[observation][head])
                assert drawn == pytest.approx(want, abs=5.001e-5)
    grid = fig.spec["vconcat"][0]
    assert grid["facet"]["column"]["sort"] == ["unmodified", "Q", "K", "V"]
    kl_filter = fig.spec["vconcat"][1]["spec"]["transform"][0]["filter"]
    assert "datum.target != 'unmodified'" in kl_filter  # KL 0 by definition: not drawn


def test_the_mean_before_the_rotation_has_its_own_figure(rope):
    iv = rope.interventions
    assert {c.target for c in iv.mean.before_rotation} == {"Q", "K"}
    fig = mean_before_rotation_figure(iv, rope.sentences[0], rope.manifest, rope.sentences)
    assert fig.key == "mean-grid-before-rotation"
    assert fig.spec["vconcat"][0]["facet"]["column"]["sort"] == ["unmodified", "Q", "K"]
    for cell in iv.mean.before_rotation:
        drawn = _cell(fig, cell.setting, cell.target, 1, "next")
        assert drawn == pytest.approx(_triangle(cell.observations["next"][1]), abs=5.001e-5)
    assert "before the rotary rotation" in fig.caption


def test_the_grids_page_shows_the_before_rotation_grid_for_rotary_models_only():
    for positional, shown in (("rope", True), ("absolute", False)):
        results = typed(fake_study(3, n_layers=3, n_heads=2, positional=positional))
        keys = [p.figure.key for p in build_figures(page_inputs(results, 0))]
        assert keys[-2:] == (
            ["mean-grid", "mean-grid-before-rotation"] if shown else ["scaling-grid", "mean-grid"]
        )


def test_a_mean_grid_of_many_inputs_draws_the_first_few_and_says_so(rope, monkeypatch):
    """Rows of maps past three are no easier to read and weigh the page down: the figure
    draws the first ``DRAWN_MEAN_INPUTS`` inputs (two here, of the fake study's three)
    and says how many the claims read."""
    from attnreport.results import interventions

    monkeypatch.setattr(interventions, "DRAWN_MEAN_INPUTS", 2)
    iv = rope.interventions
    assert len(iv.mean.sentences) == 3 and iv.mean.drawn == iv.mean.sentences[:2]
    fig = mean_figure(iv, rope.sentences[0], rope.manifest, rope.sentences)
    rows = {s for chunk in (*fig.chunks.values(), fig.inline) for s in chunk["sentence"]}
    assert rows == set(iv.mean.sentences[:2])
    assert "the first 2 of its 3 inputs (rows; the claims read all 3), " in fig.caption
