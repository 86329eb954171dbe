"""Schema 9 keeps the attention scores at the 3 decimals the map shows (``SCORE_PLACES``);
every statistic is computed from the model's float32 tensors before that rounding, and
``compare`` compares the maps within a tolerance that follows the stored precision."""

from __future__ import annotations

import copy

import numpy as np
import torch

from attnreport.attention import layer_record
from attnreport.build import study
from attnreport.capture import capture_attention
from attnreport.config import Settings
from attnreport.models import load_model
from attnreport.models.layout import discover
from attnreport.results import as_results, to_json
from attnreport.results.compare import compare_results
from attnreport.results.rounding import SCORE_PLACES, triangle_list
from attnreport.results.ties import Tolerance, map_tolerance, map_tolerance_words
from attnreport.sentence_pass import analyze_pass
from tests.test_results_maps import TEXT


def test_scores_round_to_three_decimals_without_a_negative_zero():
    scores = np.array([[0.12345, 0.0], [-0.00049, 17.0005]])
    assert triangle_list(scores, places=SCORE_PLACES) == [[0.123], [0.0, 17.0]]
    assert str(triangle_list(scores, places=SCORE_PLACES)[1][0]) == "0.0"  # not -0.0
    assert triangle_list(scores) == [[0.12345], [-0.00049, 17.0005]]  # 6 digits otherwise


def test_the_maps_keep_three_decimals_and_the_tables_the_float32_values(tiny_model_dirs):
    loaded = load_model(str(tiny_model_dirs["llama"]))
    model, ids = loaded.model, torch.tensor(loaded.tokenizer(TEXT).input_ids)
    specs = discover(loaded.family, model)
    tables, maps = analyze_pass(model, specs, ids, Settings(map_tokens=len(ids)))
    assert maps is not None
    stored = np.array([v for layer in maps.scores for h in layer for row in h for v in row])
    assert np.abs(stored * 1000 - np.rint(stored * 1000)).max() < 1e-6  # 3 decimals
    capture = capture_attention(model, specs, ids)
    top = tables.top.arrays()
    for spec, raw in zip(specs, capture.raw, strict=True):
        probs = layer_record(spec, raw, with_terms=False).probs.double().numpy()
        rows = np.asarray(top["layer"]) == spec.layer
        heads, queries = np.asarray(top["head"])[rows], np.asarray(top["query"])[rows]
        model_top = probs[heads, queries].max(-1)
        # the table's p_top1 is the float32 probability (6 digits), not one derived from
        # the stored 3-decimal scores, which is up to 1e-3 of itself away
        np.testing.assert_allclose(np.asarray(top["p_top1"])[rows], model_top, rtol=1e-5)
        derived = np.array(
            [max(maps.probs[spec.layer][h][q]) for h, q in zip(heads, queries, strict=True)]
        )
        np.testing.assert_allclose(derived, model_top, rtol=1.0006e-3)
    gaps = [
        abs(max(maps.probs[s.layer][0][-1]) - float(np.asarray(top["p_top1"])[i]))
        for s in specs
        for i in np.flatnonzero(
            (np.asarray(top["layer"]) == s.layer)
            & (np.asarray(top["head"]) == 0)
            & (np.asarray(top["query"]) == len(ids) - 1)
        )
    ]
    assert max(gaps) > 1e-6  # the rounding shows: the table was not read off the maps


def test_compare_allows_a_score_one_stored_unit_away_and_says_so(tiny_model_dirs, tmp_path):
    (tmp_path / "s.txt").write_text(TEXT + "\n")
    settings = Settings(model=str(tiny_model_dirs["llama"]), sentences=str(tmp_path / "s.txt"))
    _, results = study(settings)
    parts = to_json(results)

    def nudged(by: float):
        moved = copy.deepcopy(parts)
        moved["sentences"][0]["attention"]["scores"][1][0][5][2] += by
        return as_results(moved)

    unit = 10.0**-SCORE_PLACES
    assert compare_results(results, nudged(unit)).ok  # rounded the other way: agreed
    far = compare_results(results, nudged(3 * unit))
    assert any("attention.scores: 1 value(s) differ" in p for p in far.problems)
    maps = map_tolerance(Tolerance(rtol=1e-3, atol=1e-4))
    assert (maps.atol, maps.rtol) == (1.5e-3, 2e-3)
    assert map_tolerance_words(Tolerance()) == (
        "maps compared within atol 0.0015, rtol 0.002: their scores are kept at 3 decimals"
    )
