"""Scales and marks chosen from the data a figure draws (issue 40), checked on planted
values and on the committed example's results (read, not analysed again)."""

from __future__ import annotations

import colorsys
from pathlib import Path

import numpy as np
import pytest

from attnreport.charts.figures.attention import attention_map_figure
from attnreport.charts.figures.block_impact import block_impact_figure, pooled_impact_figure
from attnreport.charts.figures.impact import histogram_figure, noise_band
from attnreport.charts.spec import scales
from attnreport.charts.spec.theme import KIND_RANGE
from attnreport.results import load

EXAMPLE = Path(__file__).resolve().parent.parent / "site"


@pytest.fixture(scope="module")
def gemma():
    return load(EXAMPLE / "gemma-3-270m" / "results")


@pytest.fixture(scope="module")
def smollm2():
    return load(EXAMPLE / "smollm2-135m-instruct" / "results")


def test_a_ratio_spanning_more_than_two_decades_gets_a_log_scale():
    assert scales.decades([0.01, 0.1, 1.0]) == pytest.approx(2.0)
    assert scales.scale_type([0.01, 0.1, 1.0]) == "linear"  # two decades: not more
    assert scales.scale_type([0.009, 1.0]) == "log"
    assert scales.scale_type([0.0, 0.009, 1.0]) == "symlog"  # a zero has no log
    assert scales.scale_type([0.0, 0.0]) == "linear" and scales.decades([5.0]) == 0.0
    assert scales.ratio_scale([0.009, 1.0]).to_dict() == {"type": "log"}
    assert scales.ratio_scale([0.0, 0.009, 1.0]).to_dict() == {"type": "symlog", "constant": 0.009}
    assert "2.0 powers of ten" in scales.scale_words([0.01, 1.0 + 1e-9])
    assert scales.scale_words([0.5, 1.0]) == ""


def colour_positions(values: np.ndarray, scale: dict) -> np.ndarray:
    """Where each value falls on a colour scale, 0 to 1 (its domain, clamped)."""
    low, high = scale["domain"]
    if scale.get("type") == "log":
        values, low, high = np.log10(values), np.log10(low), np.log10(high)
    return np.clip((values - low) / (high - low), 0, 1)


def test_gemmas_head_impact_spreads_its_layers_over_the_colours(gemma):
    """16 of Gemma's 18 layers fell in the first fifth of a linear scale (its first two
    layers add 1-3 x ||x||); on the log scale chosen from the data, at most a third of its
    heads share the first fifth, and the scale covers every head."""
    figure = pooled_impact_figure(gemma.set, gemma.manifest)
    magnitude = np.asarray(figure.inline["magnitude"])
    scale = figure.spec["concat"][0]["encoding"]["color"]["scale"]
    assert scale["type"] == "log" and "log scale" in figure.caption
    assert scale["domain"][0] <= magnitude.min() and scale["domain"][1] >= magnitude.max() * 0.999
    assert (colour_positions(magnitude, scale) < 0.2).mean() < 1 / 3
    linear = {"domain": [0, np.percentile(magnitude, 98)]}
    assert (colour_positions(magnitude, linear) < 0.2).mean() > 0.8  # what it was


def test_impact_by_position_is_logarithmic_exactly_when_its_values_span_decades(gemma):
    for sentence in gemma.sentences:
        figure = block_impact_figure(sentence)
        y = figure.spec["layer"][0]["encoding"]["y"]
        values = figure.inline["magnitude"]
        assert scales.decades(values) > 2  # Gemma's layer 1 at 15 x against 0.006
        assert y["scale"] == {"type": "log"} and "(log scale)" in y["title"], sentence.index


def hue(colour: str) -> tuple[float, float]:
    """(hue in degrees, saturation) of a "#rrggbb" colour."""
    r, g, b = (int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5))
    h, _, s = colorsys.rgb_to_hls(r, g, b)
    return 360 * h, s


def test_the_attention_maps_colours_share_no_hue_with_its_dots(smollm2):
    spec = attention_map_figure(smollm2.sentences[0], manifest=smollm2.manifest).spec
    cells = spec["layer"][0]["encoding"]["color"]["scale"]["range"]
    dots = spec["layer"][1]["encoding"]["color"]["scale"]["range"]
    assert dots == KIND_RANGE
    for cell in cells:
        cell_hue, cell_saturation = hue(cell)
        for dot in dots:
            dot_hue, dot_saturation = hue(dot)
            if min(cell_saturation, dot_saturation) < 0.2:
                continue  # grey or near white: no hue to share
            apart = abs(cell_hue - dot_hue) % 360
            assert min(apart, 360 - apart) >= 60, (cell, dot)


def first_tokens(sentence, n: int):
    """``sentence`` cut to its first ``n`` tokens, as far as the update histograms read it:
    its tokens and its per-token head impact (a short sentence's values, from real ones;
    the example's passages are all 64 tokens or more)."""
    from dataclasses import replace

    from attnreport.results.tables import HeadImpactTable, TokensTable

    impact = sentence.tables.head_impact.arrays()
    rows = impact["query"] < n
    tokens = sentence.tokens.arrays()
    kept = tokens["position"] < n
    return replace(
        sentence,
        n_tokens=n,
        tokens=TokensTable(**{k: np.asarray(v)[kept] for k, v in tokens.items()}),
        tables=replace(
            sentence.tables,
            head_impact=HeadImpactTable(**{k: np.asarray(v)[rows] for k, v in impact.items()}),
        ),
    )


def test_few_tokens_a_head_are_a_strip_with_the_noise_band_and_many_are_histograms(smollm2, gemma):
    short = first_tokens(smollm2.sentences[0], 8)  # 8 tokens: 8 values a head
    strip = histogram_figure(short, "orientation", manifest=smollm2.manifest)
    marks = [layer["mark"]["type"] for layer in strip.spec["layer"]]
    assert marks == ["rect", "point"]  # the noise band under the points
    band = noise_band(smollm2.manifest)
    assert band == pytest.approx(3 / np.sqrt(smollm2.manifest.model.hidden_size), abs=1e-4)
    assert strip.spec["layer"][0]["encoding"]["x"] == {"datum": -band}
    assert f"{band:g}" in strip.caption and "too few for a histogram" in strip.caption
    magnitude = histogram_figure(short, "magnitude", manifest=smollm2.manifest)
    assert [layer["mark"]["type"] for layer in magnitude.spec["layer"]] == ["point"]

    long = max(gemma.sentences, key=lambda s: s.n_tokens)  # 64 tokens or more: histograms
    assert long.n_tokens >= scales.STRIP_BELOW
    histogram = histogram_figure(long, "orientation", manifest=gemma.manifest).spec
    assert histogram["spec"]["mark"]["type"] == "bar"
    # each head its own x axis: a wrapped facet then draws no axis under a missing head
    assert histogram["resolve"] == {"axis": {"x": "independent"}}
