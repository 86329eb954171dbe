"""Index figure beside StreamingLLM's claim: per layer, the attention the first token
receives (mean p_i0) in both captures of the sentences, with the BOS token first and with
the sentence's own first token first, against uniform attention's share (``claims.streaming``
tests the claim on the same numbers)."""

from __future__ import annotations

import numpy as np

from attnreport.charts.figure import Columns, Figure
from attnreport.charts.spec.layer_series import BAND_WORDS, layer_series_figure, series_rows
from attnreport.results import Manifest, SetResults
from attnreport.site.words.claims.streaming import BOS, FIRST_LAYER, OWN, uniform_share
from attnreport.site.words.readings import arrays

KEY = "first-token-bos"


def _layer_means(table: dict[str, np.ndarray]) -> dict[int, list[float]]:
    """Per layer, each sentence's median over the heads of the first token's probability
    (``table``: ``focus_by_sentence`` or ``bos_contrast`` columns)."""
    out: dict[int, list[float]] = {}
    for layer in np.unique(table["layer"]):
        rows = table["layer"] == layer
        for s in np.unique(table["sentence"][rows]):
            here = rows & (table["sentence"] == s)
            out.setdefault(int(layer), []).append(float(np.median(table["first_prob"][here])))
    return out


def first_token_bos_rows(set_results: SetResults) -> Columns:
    """Per layer and capture, the median over sentences of the heads' median first-token
    probability, with its interval (the run's capture is the contrast's other condition)."""
    own = arrays(set_results.focus_by_sentence)
    other = arrays(set_results.bos_contrast)
    with_bos = bool(other["bos"][0])
    return series_rows({(OWN if with_bos else BOS): _layer_means(own),
                        (BOS if with_bos else OWN): _layer_means(other)})  # fmt: skip


def first_token_bos_figure(set_results: SetResults, manifest: Manifest) -> Figure:
    rows = first_token_bos_rows(set_results)
    n_first = arrays(set_results.focus_by_sentence)["n_first"]
    uniform = float(np.median(uniform_share(np.maximum(n_first, 0))))
    caption = (
        "For every layer, the attention the first token receives (its mean probability over "
        "queries 1..n−1, the median over the layer's heads, then over sentences; "
        f"{BAND_WORDS}) in the two captures of every sentence: with the tokenizer's BOS "
        "token first, and with the sentence's own first token first. The token at position "
        "0 changes, its position does not. The dashed line is what uniform attention would "
        "give the first token (the median over sentences). StreamingLLM claims a sink forms "
        f"on the first token whatever it is, beyond the bottom two layers (shaded: layers "
        f"before {FIRST_LAYER})."
    )
    return layer_series_figure(
        KEY, "The first token with and without a BOS", caption, rows, manifest,
        title="Attention on the first token, with and without a BOS",
        y_title="mean first-token probability", series_title="captured", log=False,
        reference=(uniform, "uniform attention"), outside=(-0.5, FIRST_LAYER - 0.5),
    )  # fmt: skip
