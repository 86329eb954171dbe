"""Index figure beside the source blog's claim: per layer, the update a head writes where
its top key is the first token against its update at its other tokens (medians, the
heads with tokens of both kinds), layers before the blog's scope shaded
(``claims.blog`` tests the claim on the same numbers)."""

from __future__ import annotations

import numpy as np

from attnreport.charts.figure import Columns, Figure
from attnreport.charts.spec.layer_series import BAND_WORDS, layer_series_figure, series_rows
from attnreport.results import Manifest, SetResults
from attnreport.site.words.claims.blog import FIRST_LAYER, head_ratios
from attnreport.site.words.readings import arrays

KEY = "split-updates"
FIRST, OTHER = "top key is the first token", "top key is another token"


def split_update_rows(set_results: SetResults) -> Columns:
    """Per layer and kind of token, the median over sentences of each sentence's median
    update over the layer's heads that have tokens of both kinds."""
    c = arrays(set_results.focus_by_sentence)
    heads = head_ratios(c, first_layer=0)  # sentence -> the heads with both kinds
    per_layer: dict[str, dict[int, list[float]]] = {FIRST: {}, OTHER: {}}
    for series, column in ((FIRST, "first_update"), (OTHER, "other_update")):
        for s, kept in heads.items():
            rows = c["sentence"] == s
            for layer in sorted({a for a, _ in kept}):
                mask = (
                    rows
                    & (c["layer"] == layer)
                    & np.isin(c["head"], [h for a, h in kept if a == layer])
                )
                per_layer[series].setdefault(layer, []).append(float(np.median(c[column][mask])))
    return series_rows(per_layer)


def split_update_figure(set_results: SetResults, manifest: Manifest) -> Figure:
    rows = split_update_rows(set_results)
    caption = (
        "For every layer, the update a head writes (‖u‖/‖x‖) at the tokens whose top key is "
        "the first token against the update it writes at its other tokens: the median over "
        "each head's tokens, then over the layer's heads that have tokens of both kinds, then "
        f"over sentences; {BAND_WORDS}. The source blog claims the first is near nothing in "
        f"layers {FIRST_LAYER} and later; the shaded layers lie outside that scope."
    )
    return layer_series_figure(
        KEY, "Update size by where the head looks", caption, rows, manifest,
        title="Update size by where the head looks",
        y_title="‖u‖ / ‖x‖ (log scale)", series_title="tokens whose", log=True,
        outside=(-0.5, FIRST_LAYER - 0.5),
    )  # fmt: skip
