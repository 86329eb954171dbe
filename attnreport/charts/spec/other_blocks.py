"""A hybrid's blocks without attention on the charts' layer axes.

Every per-layer table is indexed by the model's block number, and a block that is not
attention (a hybrid's Mamba, linear-attention or convolution block) has no rows. A chart
drawn against layer (``common.layer_x``) still spans every block and marks each of those
with a grey band labelled "not attention" (``layer_bands``, beside ``window_bands``); a
layer slider offers the attention layers only (``attention_layers``); every figure's
caption names them (``other_note``). A model whose every block attends gets none of this,
and its charts are unchanged.
"""

from __future__ import annotations

import altair as alt
import numpy as np

from attnreport.charts.spec.common import tip, window_bands
from attnreport.results import Manifest, SentenceResults
from attnreport.site.words import wording

LABEL = "not attention"
GREY = "#8c8c8c"


def other_layers(manifest: Manifest) -> list[int]:
    """Block numbers of the model's blocks without attention (none before schema 6)."""
    return [f.layer for f in manifest.model.layers if not f.attention]


def axis_layers(manifest: Manifest, n_layers: int) -> int:
    """How many layers a layer axis spans: every block of a hybrid, else ``n_layers``
    (read from the data)."""
    return max(n_layers, len(manifest.model.layers)) if other_layers(manifest) else n_layers


def attention_layers(sentence: SentenceResults) -> list[int]:
    """Block numbers of the layers with rows (the attention layers), from the focus table."""
    return sorted(int(v) for v in np.unique(sentence.tables.focus.arrays()["layer"]))


def layer_bands(manifest: Manifest) -> alt.Chart | alt.LayerChart | None:
    """``window_bands`` and, for a hybrid, a grey band labelled "not attention" on each
    block without attention, for a chart whose x axis is ``layer_x``; None when neither."""
    windows = window_bands(manifest)
    others = other_layers(manifest)
    if not others:
        return windows
    values = [{"from": i - 0.5, "to": i + 0.5, "layer": i, "kind": LABEL} for i in others]
    data = alt.Data(values=values)
    band = (
        alt.Chart(data)
        .mark_rect(color=GREY, opacity=0.22, clip=True)
        .encode(
            x=alt.X("from:Q"), x2="to:Q", tooltip=[tip("layer:O", "layer"), tip("kind:N", "block")]
        )
    )
    label = (
        alt.Chart(data)
        .mark_text(angle=270, align="right", baseline="middle", dx=-4, fontSize=10, color="#444")
        .encode(x=alt.X("layer:Q"), y=alt.value(0), text="kind:N")
    )
    return alt.layer(*([windows] if windows is not None else []), band, label)


def other_note(manifest: Manifest, shaded: bool = False) -> str:
    """`` Layers 0 and 2 are not attention ...``: a hybrid's blocks without attention,
    which have no rows; "" for a model whose every block attends."""
    others = other_layers(manifest)
    if not others:
        return ""
    total = len(manifest.model.layers)
    where = wording.index_set(others, "layer", total)
    verb = "is" if wording.verb_for(where, "puts") == "puts" else "are"
    grey = " (grey on a layer axis)" if shaded else ""
    return (
        f" {where[0].upper()}{where[1:]} {verb} not attention{grey}: this hybrid model's "
        "other blocks (state-space, linear-attention or convolution) have no attention "
        "to measure, so they have no rows here and no interventions."
    )


def ordinal_layers(manifest: Manifest | None, descending: bool = False) -> dict:
    """Keyword arguments for an ordinal layer axis (``alt.Y("layer:O", ...)``) of a hybrid:
    a row for every block, those without attention labelled "(not attention)" and left
    empty; {} for a model whose every block attends (the axis as the data gives it)."""
    others = [] if manifest is None else other_layers(manifest)
    if not others:
        return {}
    blocks = list(range(len(manifest.model.layers)))  # type: ignore[union-attr]
    expr = f"indexof({others}, datum.value) >= 0 ? datum.label + ' ({LABEL})' : datum.label"
    return {
        "scale": alt.Scale(domain=blocks[::-1] if descending else blocks),
        "axis": alt.Axis(labelExpr=expr),
    }
