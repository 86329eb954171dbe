"""The grids on several inputs (schema 9): one unmodified pass per input, Q or K scaled
once, the maps kept for the input drawn only, and one KL averaging convention."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from attnreport.analyses.grid_kl import grid_kl
from attnreport.config import load_settings
from attnreport.interventions import input_grids, run_modified, scale
from attnreport.models import load_model
from attnreport.models.layout import discover
from attnreport.pass_count import counting_passes, intervention_pass_plan
from attnreport.results.interventions import (
    GridCell,
    interventions_from_json,
    interventions_to_json,
)
from attnreport.session import session_for
from attnreport.study import intervention_results

SENTENCE = "the cat chased the mouse and the dog sat on the mat"
SENTENCES = ["the cat sat on the mat", "a dog chased the red ball", "birds sing at dawn today"]


@pytest.mark.parametrize("family", ["llama", "bloom", "gpt2"])
def test_scaling_q_or_k_by_epsilon_is_one_intervention(tiny_model_dirs, family):
    """s = (eps q).k = q.(eps k): every observed weight and next-token distribution agree
    to float error whichever is scaled (RoPE, ALiBi's unscaled bias, learned positions),
    which is why the grid runs it once."""
    loaded = load_model(str(tiny_model_dirs[family]))
    model, specs = loaded.model, discover(loaded.family, loaded.model)
    ids = torch.tensor(loaded.tokenizer(SENTENCE).input_ids)
    for eps in (0.5, 1e-3):
        q = run_modified(model, specs, ids, 0, scale("Q", eps), (0, 1))
        k = run_modified(model, specs, ids, 0, scale("K", eps), (0, 1))
        for layer in (0, 1):
            torch.testing.assert_close(q.probs[layer], k.probs[layer], atol=1e-6, rtol=0)
        torch.testing.assert_close(q.log_probs, k.log_probs, atol=1e-5, rtol=0)


def test_one_input_takes_one_unmodified_pass_for_every_grid(tiny_model_dirs):
    """Llama rotates q and k: 1 unmodified pass, 2 targets x 3 epsilons, Q, K and V
    replaced by their mean, Q and K averaged before the rotation: 12 passes, counted."""
    loaded = load_model(str(tiny_model_dirs["llama"]))
    model, specs = loaded.model, discover(loaded.family, loaded.model)
    ids = torch.tensor(loaded.tokenizer(SENTENCE).input_ids)
    heard: list[tuple[int, int]] = []
    with counting_passes(model, 100, lambda *c: heard.append(c)):
        grids = input_grids(model, specs, 0, ids, 1, (0.5, 1e-3, 1e-10), True)
    assert len(heard) == 12
    assert [(c.target, c.setting) for c in grids.scaling] == [
        (t, e) for t in ("QK", "V") for e in (0.5, 1e-3, 1e-10)
    ]
    assert [c.target for c in grids.mean] == ["Q", "K", "V"]
    assert [c.target for c in grids.before_rotation] == ["Q", "K"]
    alone = run_modified(model, specs, ids, 1, scale("V", 0.5), (1,))
    assert grids.scaling[3].kl.shape == (len(ids),)
    v = grids.scaling[3].outcome.probs[1]
    torch.testing.assert_close(v, alone.probs[1], atol=1e-6, rtol=0)  # a real pass, replayed


@pytest.fixture(scope="module")
def study(tmp_path_factory, tiny_model_dirs):
    """The grids of a tiny Llama on three sentences, scaled on all three, maps drawn for
    sentence 1, the mean grid on sentences 0 and 2."""
    folder = tmp_path_factory.mktemp("inputs")
    (folder / "s.txt").write_text("\n".join(SENTENCES) + "\n")
    settings = load_settings(
        None,
        {"model": str(tiny_model_dirs["llama"]), "sentences": str(folder / "s.txt"),
         "scaling_sentence": 1, "mean_sentences": [0, 2]},
    )  # fmt: skip
    session = session_for(settings)
    heard: list[tuple[int, int]] = []
    with counting_passes(session.model, 1000, lambda *c: heard.append(c)):
        iv = intervention_results(session, settings, 1)
    return session, settings, iv, len(heard)


def test_the_pass_plan_names_and_counts_every_pass(study):
    session, settings, iv, passes = study
    plan = intervention_pass_plan(session, settings, 1)
    assert plan == {"unmodified": 3, "scaling": 18, "mean": 6, "mean before rotation": 4}
    assert sum(plan.values()) == passes


def test_only_the_drawn_input_keeps_maps_and_every_cell_its_checks(study):
    session, _, iv, _ = study
    lengths = [len(ids) for ids in session.token_tensors()]
    grid = iv.scaling
    assert (grid.sentence, grid.inputs) == (1, (0, 1, 2)) and len(grid.cells) == 18
    for cell in grid.cells:
        drawn = grid.sentence_of(cell) == 1
        assert bool(cell.observations) == drawn, cell.sentence
        assert set(cell.gaps) == set(cell.moved) == {"same", "next", "last"}
        assert len(cell.kl) == lengths[grid.sentence_of(cell)]
        if cell.target == "V":
            assert cell.moved["same"] == [0.0] * len(cell.moved["same"])  # by construction
    again = interventions_from_json(interventions_to_json(iv))
    assert again == iv
    shown_v = next(c for c in again.scaling.shown if c.target == "V")
    assert shown_v.observations["same"] == grid.baseline["same"]  # filled in from the baseline
    assert "same" not in interventions_to_json(iv)["scaling"]["cells"][3]["observations"]
    assert set(iv.mean.baselines) == {0, 2} and iv.mean.sentences == (0, 2)


def _cell(sentence: int, kl: list[float]) -> GridCell:
    return GridCell("V", 0.5, {}, kl, sentence=sentence)


def test_the_kl_of_an_intervention_averages_each_sentence_then_the_sentences():
    """Sentence 0: 2 positions, mean 1.0; sentence 1: 6 positions, mean 0.0. Each sentence
    weighs the same: 0.5 (pooling the 8 positions would give 0.25)."""
    cells = [_cell(0, [0.5, 1.5]), _cell(1, [0.0] * 6)]
    kl = grid_kl(cells, lambda c: c.sentence)
    assert (kl.mean, kl.low, kl.high, kl.n) == (0.5, 0.0, 1.0, 2)
    # Q and K scaled apart on one sentence (before schema 9) are one intervention: one
    # sentence, its positions together (mean 0.25), beside sentence 1 (mean 0.75)
    q, k = GridCell("Q", 0.5, {}, [0.0, 0.5]), GridCell("K", 0.5, {}, [0.0, 0.5])
    both = grid_kl([q, k, GridCell("Q", 0.5, {}, [0.75], sentence=1)], lambda c: c.sentence or 0)
    assert (both.mean, both.low, both.high, both.n) == (0.5, 0.25, 0.75, 2)
    assert grid_kl([], lambda c: 0) == grid_kl([], lambda c: 1) and grid_kl([], int).n == 0


def test_the_comparison_and_the_words_print_one_kl_per_intervention():
    """The comparison's bar (``multi.measures.kl_rows``) and the model page's wording
    (``effects.scaling_effects``) give each intervention the same value, recomputed here by
    hand: each sentence's mean over its positions, then the mean over sentences."""
    from attnreport.multi.measures import ModelSide, kl_rows
    from attnreport.site.words.effects import scaling_effects
    from tests.fixtures.grids import cell, grids

    kls = {0: [0.2, 0.4], 1: [0.1] * 5, 2: [0.9]}
    iv = grids(2, [cell("V", 0.5, kl, sentence=i) for i, kl in kls.items()], epsilons=[0.5])
    expected = sum(sum(v) / len(v) for v in kls.values()) / 3  # (0.3 + 0.1 + 0.9) / 3
    manifest = SimpleNamespace(model=SimpleNamespace(n_layers=4))  # what kl_rows reads
    rows = kl_rows([ModelSide("m", "m", manifest, None, iv)])
    assert rows["cell"] == ["V x 0.5"] and rows["sentences"] == [3]
    assert rows["mean_kl"][0] == pytest.approx(expected, abs=1e-6)
    assert (rows["low"][0], rows["high"][0]) == (pytest.approx(0.1), pytest.approx(0.9))
    (effect,) = scaling_effects(iv.scaling)
    assert effect.mean == pytest.approx(expected, abs=1e-12)


def test_the_grid_checks_read_every_sentence_scaled():
    """The v-own-layer and qk-uniform checks take each head's largest change (gap) over
    every sentence scaled, not the drawn sentence's alone (0), and give the KL as the
    findings do: over both sentences, (0.3 + 0.9) / 2, with the spread."""
    from attnreport.site.words.claims import ClaimInputs
    from attnreport.site.words.claims.construction import qk_scaling_uniform, v_scaling_own_layer
    from tests.fixtures.grids import grids

    def moved(same: float, nxt: float) -> dict[str, list[float]]:
        return {"same": [0.0, same], "next": [nxt, 0.1], "last": [0.1, 0.1]}

    def gaps(g: float) -> dict[str, list[float]]:
        return {"same": [0.001, g], "next": [0.2, 0.2], "last": [0.2, 0.2]}

    cells = [
        GridCell("V", 1e-10, {}, [0.2, 0.4], moved=moved(0.0, 0.5), sentence=0),
        GridCell("V", 1e-10, {}, [0.9], moved=moved(0.3, 0.7), sentence=1),
        GridCell("QK", 1e-10, {}, [0.1, 0.1], gaps=gaps(0.002), sentence=0),
        GridCell("QK", 1e-10, {}, [0.1], gaps=gaps(0.4), sentence=1),
    ]
    iv = grids(3, cells, baseline={"same": [[[1.0]]]}, epsilons=[1e-10])
    inputs = ClaimInputs({}, iv, positional="rope")
    v = v_scaling_own_layer(inputs)
    assert v.evidence.startswith("V scaled by 1e-10 in layer 3 (on 2 sentences): the layer's")
    assert "own weights move at most 0.3; layer 4's move up to 0.7;" in v.evidence
    assert (
        "KL is 0.6 nats per position, the mean over 2 sentences (from 0.3 to 0.9 by sentence)."
        in v.evidence
    )
    assert not v.passed and v.evidence.endswith("layer 3, head 1 change their own weights.")
    qk = qk_scaling_uniform(inputs)
    assert qk.evidence.startswith("Q or K scaled by 1e-10 in layer 3 (on 2 sentences): the ")
    assert "uniform over the keys it sees is 0.4 (the check allows 0.01)." in qk.evidence
    assert not qk.passed and qk.evidence.endswith("layer 3, head 1 stay further from uniform.")


def test_a_gap_to_uniform_below_the_stored_precision_reads_as_zero():
    """A passing check's largest gap of 4.9e-7 is the 6-digit rounding of the weights the
    grid keeps (1/3 is kept as 0.333333), not a measured distance: it is said as such."""
    from attnreport.site.words.claims import ClaimInputs
    from attnreport.site.words.claims.construction import qk_scaling_uniform
    from tests.fixtures.grids import grids

    def gaps(g: float) -> dict[str, list[float]]:
        return {"same": [g, g / 2], "next": [0.2, 0.2], "last": [0.2, 0.2]}

    cells = [
        GridCell("QK", 1e-10, {}, [0.1, 0.1], gaps=gaps(4.9e-7), sentence=0),
        GridCell("QK", 1e-10, {}, [0.1], gaps=gaps(3.3e-7), sentence=1),
    ]
    iv = grids(3, cells, baseline={"same": [[[1.0]]]}, epsilons=[1e-10])
    qk = qk_scaling_uniform(ClaimInputs({}, iv, positional="rope"))
    assert qk.passed
    assert "sees is below 1e-6, 0 at the precision the weights are kept at" in qk.evidence
    assert "4.9e-7" not in qk.evidence
