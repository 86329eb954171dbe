"""Issue 28, weight that grows gently: the intervention observations of an input the
grids draw as blocks (more than 32 observed positions) are kept as those blocks, with
the claims' per-head numbers read off the exact rows; checked against the same input
observed whole (the blocking turned off), for a long input (past ``map_tokens``) and a
shorter one."""

from __future__ import annotations

import json

import numpy as np
import pytest

from attnreport import study
from attnreport.charts.figures.grid_blocks import block_shares, blocks_for
from attnreport.charts.figures.interventions import cell_rows
from attnreport.config import Settings
from attnreport.results import GridCell
from attnreport.results.interventions import interventions_from_json, interventions_to_json
from attnreport.session import open_session
from attnreport.site.words.claims.maps import changes, locality, uniform_gaps
from tests.tiny_models import story

LONG = 70
MAP_TOKENS = (40, 256)  # 40 of the 70 positions observed (a long input), or all 70
BLOCK = {40: 2, LONG: 3}  # observed positions -> the grids' block size
TOL = 2e-6  # two roundings to 6 places (5e-7 each) and the blockwise pass's float error


@pytest.fixture(scope="module", params=MAP_TOKENS)
def both(request, tiny_model_dirs, tmp_path_factory):
    """Interventions at layer 0 of one 70-token input, kept as blocks and whole, and the
    positions observed."""
    file = tmp_path_factory.mktemp("blocks") / "s.txt"
    file.write_text(story(LONG) + "\n")
    session = open_session(str(tiny_model_dirs["llama"]), str(file), bos="never")
    assert len(session.sentences[0].token_ids) == LONG
    settings = Settings(map_tokens=request.param)
    blocked = study.intervention_results(session, settings, 0)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(study, "block_size", lambda positions: 1)  # keep every input whole
        whole = study.intervention_results(session, settings, 0)
    return blocked, whole, min(LONG, request.param)


def leading(triangle: list, m: int) -> list:
    return [row[: q + 1] for q, row in enumerate(triangle[:m])]


def pairs(blocked, whole):
    grids = [(blocked.scaling.cells, whole.scaling.cells), (blocked.mean.cells, whole.mean.cells)]
    return [(b, w) for cells_b, cells_w in grids for b, w in zip(cells_b, cells_w, strict=True)]


def test_blocked_cells_hold_the_drawn_blocks_of_the_exact_rows(both):
    blocked, whole, m = both
    size = blocks_for(m).size
    assert size == BLOCK[m]
    for b, w in pairs(blocked, whole):
        assert b.blocks == (size, m) and w.blocks is None
        assert b.kl == pytest.approx(w.kl, abs=1e-5)
        for name, heads in w.observations.items():
            for head, triangle in enumerate(heads):
                exact = leading(triangle, m)
                q, k, v = block_shares(exact, blocks_for(m))
                stored = b.observations[name][head]
                assert [len(row) for row in stored] == list(range(1, -(-m // size) + 1))
                got = [stored[i][j] for i, j in zip(q, k, strict=True)]
                assert np.abs(np.array(got) - np.array(v)).max() <= TOL * size


def test_blocked_cells_carry_the_claims_numbers_of_the_exact_rows(both):
    blocked, whole, m = both
    base = {n: [leading(t, m) for t in h] for n, h in whole.scaling.baseline.items()}
    for b, w in pairs(blocked, whole):
        for name, heads in w.observations.items():
            exact = [leading(t, m) for t in heads]
            assert b.gaps[name] == pytest.approx(uniform_gaps(exact), abs=TOL)
            # the seed-003 structure measure, read off the exact rows, as a kept map gives it
            assert b.locality[name] == pytest.approx([locality(t) for t in exact], abs=1e-5)
            if b in blocked.scaling.cells:
                assert b.moved[name] == pytest.approx(changes(exact, base[name]), abs=TOL)


def test_grid_rows_of_a_blocked_cell_are_those_drawn_from_the_exact_rows(both):
    blocked, whole, m = both
    for b, w in pairs(blocked, whole)[:3]:
        cut = {n: [leading(t, m) for t in h] for n, h in w.observations.items()}
        exact = GridCell(w.target, w.setting, cut, w.kl)
        for head in range(len(w.observations["same"])):
            got, want = cell_rows(b, head, "next", {}), cell_rows(exact, head, "next", {})
            assert got["query"] == want["query"] and got["key"] == want["key"]
            assert np.abs(np.array(got["prob"]) - np.array(want["prob"])).max() <= 1.5e-3
            assert np.abs(np.array(got["kl"]) - np.array(want["kl"])).max() <= 1e-3


def test_blocked_interventions_round_trip_and_are_far_smaller(both):
    blocked, whole, m = both
    written = json.loads(json.dumps(interventions_to_json(blocked)))
    again = interventions_from_json(written)
    assert again.scaling.cells[0].blocks == (blocks_for(m).size, m)
    assert again.scaling.cells[0].gaps == blocked.scaling.cells[0].gaps
    assert len(json.dumps(written)) * 2 < len(json.dumps(interventions_to_json(whole)))
    assert "blocks" not in json.dumps(interventions_to_json(whole)["scaling"]["cells"][0])
