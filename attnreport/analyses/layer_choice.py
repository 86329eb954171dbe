"""Which layer the interventions run in, and why: one rule, read by the analysis that
applies it and by the pages that state it.

The layer is, in order: the ``intervene_layer`` setting; else the attention layer nearest
the relative depth ``intervene_depth`` (a comparison sets it for every model after the
first, so the models intervene at matched depths, and the first keeps its own rule);
else the layer whose heads, on average, most often put their top target on the first
token (``strongest_first_token_layer``, over the pooled first-token focus). Relative depth
is ``layer / (n_layers - 1)``: 0 the first layer, 1 the last. Pure and torch-free.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np


def depth(layer: int, n_layers: int) -> float:
    """Relative depth of ``layer`` in a model of ``n_layers``: 0 first, 1 last."""
    return round(layer / (n_layers - 1), 6) if n_layers > 1 else 0.0


def matched_layer(reference_depth: float, n_layers: int) -> int:
    """The layer of a model of ``n_layers`` nearest to ``reference_depth`` (ties go down)."""
    if n_layers < 2:
        return 0
    return int(np.floor(reference_depth * (n_layers - 1) + 0.5 - 1e-9))


def first_focus_by_layer(pooled: Mapping[str, Any]) -> dict[int, float]:
    """Layer -> the mean over its heads of the pooled first-token focus (``focus_pooled``
    columns)."""
    rows = np.asarray(pooled["statistic"]) == "first_focus"
    layers = np.asarray(pooled["layer"])[rows]
    values = np.asarray(pooled["value"], dtype=np.float64)[rows]
    return {int(layer): float(values[layers == layer].mean()) for layer in np.unique(layers)}


def strongest_first_token_layer(pooled: Mapping[str, Any]) -> int:
    """The layer whose heads, on average, most often put their top target on the first
    token (ties to the lower layer)."""
    means = first_focus_by_layer(pooled)
    return min(means, key=lambda layer: (-means[layer], layer))
