"""Scaling: q, k or v of every head of the layer multiplied by an epsilon.

Scaling q (or k: the same scores, s = epsilon q.k) by a small epsilon tempers the logits
towards uniform attention over each query's allowed keys (and the learned sink, where the model has one); for ALiBi
models the ALiBi bias is not scaled, so attention tends to the ALiBi pattern instead.
Scaling v leaves this layer's probabilities unchanged by construction; its effect
shows in later layers.
"""

from __future__ import annotations

from attnreport.interventions.kinds import Change, Kind, Modifier, on_target, register
from attnreport.models.layout import LayerSpec


def scale(target: str, epsilon: float) -> Modifier:
    """Multiply q, k or v (every head, every position) by ``epsilon``."""
    return on_target(target, lambda x: x * epsilon)


# Scaling q or k by epsilon is one intervention: every score becomes s = epsilon q.k either
# way (an ALiBi bias, a learned sink, a window and a soft-cap act alike on both), so the
# grid runs it once, as "QK", by scaling q; V is the other row.
SCALED = {"QK": "Q", "Q": "Q", "K": "K", "V": "V"}  # grid target -> the tensor scaled
TARGETS = ("QK", "V")


def _change(_spec: LayerSpec, target: str, epsilon: float | None) -> Change:
    assert epsilon is not None, "scaling takes an epsilon"
    return Change(scale(SCALED[target], epsilon))


SCALE = register(Kind("scale", _change, TARGETS))
