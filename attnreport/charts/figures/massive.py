"""Index figure: massive activations per layer (Sun et al. 2024): the largest residual
activation's ratio to the layer's median |activation|, per layer over the sentences,
coloured by whether it sits on the first token in every sentence."""

from __future__ import annotations

from attnreport.charts.figure import Columns, Figure
from attnreport.charts.spec.layer_series import BAR_WORDS, layer_series_figure, series_rows
from attnreport.results import Manifest, SetResults
from attnreport.site.words.readings import arrays

KEY = "massive-activations"
FIRST, ELSEWHERE = "on the first token in every sentence", "elsewhere in some sentence"
# results before schema 9 keep only the set's largest per layer
SET_FIRST, SET_ELSEWHERE = "on the first token", "elsewhere"


def _rows(set_results: SetResults) -> dict:
    """Every sentence's rows (schema 9), else the set's largest per layer."""
    table = set_results.massive_by_sentence or set_results.massive_activations
    return arrays(table)


def massive_rows(set_results: SetResults) -> Columns:
    """Per layer, the median over sentences of the ratio, with its interval; ``series``:
    whether the largest activation sits on the first token in every sentence."""
    c = _rows(set_results)
    first, elsewhere = (
        (FIRST, ELSEWHERE)
        if set_results.massive_by_sentence is not None
        else (SET_FIRST, SET_ELSEWHERE)
    )
    per_layer: dict[str, dict[int, list[float]]] = {first: {}, elsewhere: {}}
    for layer in sorted({int(v) for v in c["layer"]}):
        rows = c["layer"] == layer
        series = first if bool((c["position"][rows] == 0).all()) else elsewhere
        per_layer[series][layer] = [float(v) for v in c["ratio"][rows]]
    return series_rows({k: v for k, v in per_layer.items() if v})


def massive_figure(set_results: SetResults, manifest: Manifest) -> Figure:
    rows = massive_rows(set_results)
    each = set_results.massive_by_sentence is not None
    over = (
        f"per sentence, then the median over sentences; {BAR_WORDS}"
        if each
        else "the largest over the set (these results keep no row per sentence)"
    )
    caption = (
        "For every layer, the largest |activation| of the residual stream entering the "
        f"layer against the median |activation| of that layer ({over}). Sun et al. (2024) "
        "call activations thousands of times the median massive, and find them on the "
        "first token, where the attention sink is; the colour says whether the largest sits "
        "on the first token" + (" in every sentence." if each else ".")
    )
    return layer_series_figure(
        KEY, "Massive activations", caption, rows, manifest,
        title="Massive activations per layer",
        y_title="largest |activation| / median (log scale)", series_title="the largest sits",
        log=True, connect=False,
    )  # fmt: skip
