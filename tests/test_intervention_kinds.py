"""An intervention kind is one registered module: a toy kind declared here alone (scaling
the attention output O, which no built-in kind touches) runs through the generic grid, and
its pass matches the model run with that layer's output projection zeroed by hand."""

from __future__ import annotations

import pytest
import torch

from attnreport.errors import AttnReportError
from attnreport.interventions import (
    KINDS,
    Change,
    Kind,
    baseline,
    cells,
    identity,
    kind,
    next_token_kl,
    register,
)
from attnreport.models import load_model
from attnreport.models.layout import discover

SENTENCE = "the cat chased the mouse and the dog sat on the mat"
LAYER = 1


def scale_output(spec, target: str, epsilon: float | None) -> Change:
    """O (the heads' concatenated outputs, the output projection's input) times epsilon."""
    assert target == "O" and epsilon is not None

    def hook(_module, args, kwargs):
        return (args[0] * epsilon, *args[1:]), kwargs

    return Change(identity, ((spec.out_proj, "pre", hook),))


@pytest.fixture
def scale_o():
    toy = register(Kind("scale_o", scale_output, targets=("O",)))
    yield toy
    KINDS.pop("scale_o")


@pytest.fixture(scope="module")
def llama(tiny_model_dirs):
    loaded = load_model(str(tiny_model_dirs["llama"]))
    ids = torch.tensor(loaded.tokenizer(SENTENCE).input_ids)
    return loaded.model, discover(loaded.family, loaded.model), ids


def test_the_built_in_kinds_are_registered():
    assert {"scale", "mean", "mean_before_rotation"} <= set(KINDS)
    assert kind("scale").targets == ("QK", "V")  # Q or K scaled: one intervention
    assert kind("mean").targets == ("Q", "K", "V")
    with pytest.raises(AttnReportError, match="unknown intervention kind 'nope'"):
        kind("nope")


def test_a_kind_registered_in_a_test_runs_in_the_generic_grid(llama, scale_o):
    model, specs, ids = llama
    assert kind("scale_o") is scale_o
    base = baseline(model, specs, ids, LAYER)
    grid = cells(model, specs, ids, LAYER, scale_o, base, (1.0, 0.0))
    assert [(c.target, c.setting) for c in grid] == [("O", 1.0), ("O", 0.0)]
    same, zero = grid
    assert same.kl.abs().max() < 1e-5  # epsilon 1 changes nothing
    # O is made after this layer's probabilities: they stay; the next layer's move
    torch.testing.assert_close(zero.outcome.probs[LAYER], base.probs[LAYER], rtol=0, atol=0)
    assert (zero.outcome.probs[LAYER + 1] - base.probs[LAYER + 1]).abs().max() > 1e-4

    # independently: the plain model with this layer's output projection zeroed by hand
    weight = specs[LAYER].out_proj.weight
    assert specs[LAYER].out_proj.bias is None  # llama: no bias, so zero weight = zero output
    plain = torch.log_softmax(model(input_ids=ids[None]).logits[0].float(), -1)
    saved = weight.detach().clone()
    try:
        with torch.no_grad():
            weight.zero_()
            zeroed = torch.log_softmax(model(input_ids=ids[None]).logits[0].float(), -1)
    finally:
        with torch.no_grad():
            weight.copy_(saved)
    torch.testing.assert_close(zero.kl, next_token_kl(plain, zeroed), rtol=1e-4, atol=1e-6)


def test_a_kind_that_does_not_apply_gives_no_cells(llama):
    model, specs, ids = llama
    never = Kind("never", lambda spec, target, setting: Change(), applies=lambda spec: False)
    base = baseline(model, specs, ids, LAYER)
    assert cells(model, specs, ids, LAYER, never, base) == []
