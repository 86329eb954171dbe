"""Two conventions the self-check meets as the models write them (tiny models, no download).

- Granite-SWA reports ``output_attentions`` as the softmax over the keys alone and scales
  its output by the sink afterwards (gpt-oss reports p with the sink's share taken out):
  the same attention, so both verify; ours keep the sink's share, as gpt-oss's do.
- Inkling adds a relative position bias to the scores through the ``position_bias``
  argument: it is captured as the score bias, so the score terms sum to the score.
"""

from __future__ import annotations

import torch

from attnreport.capture import capture_attention
from attnreport.models.families import family_for
from attnreport.verification import verified_layers
from tests.zoo_models import build_zoo_model

IDS = torch.arange(1, 9)


def _verified(model_type: str):
    model, why = build_zoo_model(model_type)
    assert model is not None, why
    return model, verified_layers(family_for(model_type), model)


def test_a_sink_applied_after_the_softmax_verifies():
    model, specs = _verified("granite_swa")
    assert all("sinks" in s.features for s in specs)
    with torch.no_grad():
        torch.nn.init.normal_(specs[0].attention.sinks, 0.0, 1.0)  # a sink that matters
    record = capture_attention(model, specs, IDS).record(0)
    with torch.no_grad():
        theirs = model(input_ids=IDS[None], output_attentions=True, use_cache=False)
    theirs = theirs.attentions[0][0].float()
    torch.testing.assert_close(theirs.sum(-1), torch.ones_like(theirs.sum(-1)))
    ours = record.probs.sum(-1) + record.sink_probs
    torch.testing.assert_close(ours, torch.ones_like(ours))
    assert record.sink_probs.min() > 1e-3
    torch.testing.assert_close(
        record.probs / record.probs.sum(-1, keepdim=True), theirs, rtol=1e-5, atol=1e-6
    )
    verified_layers(family_for("granite_swa"), model)  # still verifies with the new sinks


def test_a_position_bias_argument_is_the_score_bias():
    model, specs = _verified("inkling_text")
    record = capture_attention(model, specs, IDS).record(0)
    assert specs[0].positions == "alibi" and record.terms["position"].abs().max() > 0
    allowed = record.allowed.expand_as(record.logits)
    total = sum(record.terms.values())
    torch.testing.assert_close(total[allowed], record.logits[allowed], rtol=1e-5, atol=1e-5)
