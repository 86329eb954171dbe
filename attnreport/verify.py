"""Checks that the captured numbers are the model's own (``attnreport verify``).

1. probabilities our attention function computed from q, k and the mask the model
   passed it vs the model's own ``output_attentions`` from its own eager code (with
   its soft-cap and sinks): max abs error <= 1e-5;
2. sum of head updates + output bias vs the model's attention block output:
   max abs error <= 1e-4 x max |block output|;
3. sum of the score terms vs the logit before any soft-cap (the score itself for
   models without one), where the mask allows: max abs error <= 1e-4 x max |logit|.
Tolerances are for float32; errors are maxima over layers, heads and sentences.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attnreport.capture import capture_attention
from attnreport.models.layout import LayerSpec
from attnreport.records import LayerRecord


@dataclass(frozen=True)
class Check:
    name: str
    max_error: float
    tolerance: float  # absolute bound the error must not exceed

    @property
    def passed(self) -> bool:
        return self.max_error <= self.tolerance


@dataclass
class _Maxima:
    probs: float = 0.0
    updates: float = 0.0
    block_scale: float = 0.0
    terms: float = 0.0
    score_scale: float = 0.0

    def add_layer(self, record: LayerRecord, model_probs: torch.Tensor) -> None:
        self.probs = max(self.probs, (record.probs - model_probs).abs().max().item())
        summed = record.updates.sum(0) + record.out_bias
        self.updates = max(self.updates, (summed - record.block_out).abs().max().item())
        self.block_scale = max(self.block_scale, record.block_out.abs().max().item())
        allowed = record.allowed.expand_as(record.logits)
        terms = sum(record.terms.values())
        self.terms = max(self.terms, (terms - record.logits)[allowed].abs().max().item())
        self.score_scale = max(self.score_scale, record.logits[allowed].abs().max().item())


def verify_sentences(
    model: torch.nn.Module, specs: list[LayerSpec], sentences: list[torch.Tensor]
) -> list[Check]:
    """Run the three checks over ``sentences`` (token id tensors of shape (n,))."""
    maxima = _Maxima()
    device = next(model.parameters()).device
    for ids in sentences:
        capture = capture_attention(model, specs, ids)
        with torch.no_grad():
            out = model(input_ids=ids[None].to(device), output_attentions=True, use_cache=False)
        for record, model_probs in zip(capture.records(), out.attentions, strict=True):
            maxima.add_layer(record, model_probs[0])
    return [
        Check("attention probabilities vs the model's output_attentions", maxima.probs, 1e-5),
        Check(
            "sum of head updates + output bias vs block output",
            maxima.updates,
            1e-4 * maxima.block_scale,
        ),
        Check(
            "sum of score terms vs pre-softmax (pre-cap) score",
            maxima.terms,
            1e-4 * maxima.score_scale,
        ),
    ]
