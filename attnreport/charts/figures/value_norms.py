"""Index figure beside Gu et al.'s claim: the first token's value-norm ratio
‖v₀‖ / mean ‖v_j‖ per layer, sink layers and the other layers (the control) in two colours
(``claims.values`` tests the claim on the same numbers)."""

from __future__ import annotations

import math

import numpy as np

from attnreport.charts.figure import Columns, Figure
from attnreport.charts.spec.layer_series import BAR_WORDS, layer_series_figure, series_rows
from attnreport.results import Manifest, SetResults
from attnreport.site.words.claims.values import log_ratios, value_sink_layers
from attnreport.site.words.readings import arrays

KEY = "value-norms"
SINK, OTHER = "sink layer", "other layer (the control)"


def value_norm_rows(set_results: SetResults) -> Columns:
    """Per layer, the median over sentences of each sentence's median ratio over the KV
    heads, with its interval; ``series`` says whether the layer is a sink layer."""
    ratios = log_ratios(arrays(set_results.value_norms))
    found, _ = value_sink_layers(set_results.focus_by_sentence, set_results.focus_pooled)
    sinks = set(found)
    per_layer: dict[str, dict[int, list[float]]] = {SINK: {}, OTHER: {}}
    for layer, by_sentence in ratios.items():
        values = [math.exp(float(np.median(rs))) for rs in by_sentence.values()]
        per_layer[SINK if layer in sinks else OTHER][layer] = values
    return series_rows({k: v for k, v in per_layer.items() if v})


def value_norm_figure(set_results: SetResults, manifest: Manifest) -> Figure:
    rows = value_norm_rows(set_results)
    _, rule = value_sink_layers(set_results.focus_by_sentence, set_results.focus_pooled)
    caption = (
        "For every layer, how long the first token's value vectors are against the other "
        "tokens': ‖v₀‖ / mean over j ≥ 1 of ‖v_j‖ (v after its projection), the median over "
        "the layer's KV heads in each sentence, then the median over sentences; "
        f"{BAR_WORDS}. Below the dashed line at 1 the first token's values are shorter. "
        f"Sink layers ({rule}) against the other layers, the control: Gu et al.'s claim is "
        "that a sink carries small values."
    )
    return layer_series_figure(
        KEY, "Value norms of the first token", caption, rows, manifest,
        title="The first token's value norm against the others'",
        y_title="‖v₀‖ / mean ‖v_j‖ (log scale)", series_title="layer", log=True,
        reference=(1.0, "the same length"),
        connect=False,
    )  # fmt: skip
