"""Issue 28, weight that grows gently: the interventions keep their observed probabilities
at six decimal places, and the bench measures a site's weight by part."""

from __future__ import annotations

import gzip
import json
from decimal import ROUND_HALF_EVEN, Decimal

import numpy as np
import pytest
import torch

from attnreport import study
from attnreport.config import Settings
from attnreport.results.rounding import PROB_PLACES, round_places
from attnreport.session import open_session
from benchmarks.weight import PARTS, site_weight

TOLERANCE = 1e-6  # 5e-7 of rounding plus the float error of two passes of the same model


def test_round_places_matches_decimal_rounding_and_drops_noise():
    rng = np.random.default_rng(0)
    values = np.concatenate([rng.random(2000), rng.random(200) * 1e-6, [0.0, 1.0, 5e-7, 2e-9]])
    got = round_places(values)
    step = Decimal(1).scaleb(-PROB_PLACES)
    for value, out in zip(values.tolist(), got.tolist(), strict=True):
        expected = float(Decimal(value).quantize(step, rounding=ROUND_HALF_EVEN))
        assert abs(out - expected) <= 1e-15, (value, out, expected)
        assert abs(out - value) <= 0.5 * 10**-PROB_PLACES + 1e-15
    assert got[-1] == 0.0 and got[-4] == 0.0 and got[-3] == 1.0
    # six decimals, so the JSON of a probability is at most "0.123456"
    assert max(len(json.dumps(v)) for v in got.tolist()) <= len("0.123456")


@pytest.fixture(scope="module")
def llama_session(tiny_model_dirs, tmp_path_factory):
    sentences = tmp_path_factory.mktemp("weight") / "s.txt"
    sentences.write_text("the cat chased the mouse on the mat\nwhat does attention focus ?\n")
    return open_session(str(tiny_model_dirs["llama"]), str(sentences), bos="never")


def test_observed_probabilities_are_the_models_at_six_decimals(llama_session):
    session = llama_session
    interventions = study.intervention_results(session, Settings(), layer=0)
    ids = session.token_tensors()[interventions.scaling.sentence]
    with torch.no_grad():
        out = session.model(ids[None], output_attentions=True)
    for name, layer in interventions.observed_layers.items():
        model_probs = out.attentions[layer][0].double().numpy()  # (head, query, key)
        for head, triangle in enumerate(interventions.scaling.baseline[name]):
            for query, row in enumerate(triangle):
                stored = np.array(row, dtype=np.float64)
                expected = model_probs[head, query, : query + 1]
                assert np.abs(stored - expected).max() <= TOLERANCE, (name, head, query)
                assert np.allclose(stored * 10**PROB_PLACES, np.rint(stored * 10**PROB_PLACES))


def test_site_weight_splits_a_folder_by_part(tmp_path):
    files = {
        "results/sentences/000.json.gz": gzip.compress(b"{}" * 400),
        "data/s000/attention-map/a.js": b"x" * 1000,
        "figures/s000/map.svg": b"<svg/>" * 10,
        "index.html": b"<html>" * 7,
        "assets/vega.js": b"v" * 321,
    }
    for name, content in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
    weight = site_weight(tmp_path)
    sizes = {name: len(content) for name, content in files.items()}
    assert weight["total"] == sum(sizes.values())
    assert weight["files"] == len(files)
    assert weight["largest"] == ("data/s000/attention-map/a.js", 1000)
    for part in PARTS:
        assert weight[part] == sum(s for n, s in sizes.items() if n.startswith(part + "/"))
    assert weight["pages"] == sizes["index.html"] + sizes["assets/vega.js"]
