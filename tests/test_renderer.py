"""The renderer rule: SVG up to CANVAS_MARKS marks in the default view, a canvas beyond.

The mark count is checked against Vega's own scenegraph (vl-convert draws the static
view, which is the default view with its rows inline) and against counts worked out by
hand from the rows; the threshold decision at and just past the bound.
"""

from __future__ import annotations

import altair as alt
import pytest
import vl_convert

from attnreport.charts.export.images import VL_VERSION
from attnreport.charts.figures import block_impact, focus, impact_scatter
from attnreport.charts.spec.assemble import build_figure, columns_to_rows, static_view
from attnreport.charts.spec.renderer import CANVAS_MARKS, choose_renderer, default_marks
from tests.fixtures.fake_results import (
    fake_manifest,
    fake_sentence,
    typed_manifest,
    typed_sentence,
)


def grid_chart(key: str) -> alt.Chart:
    """Rect cells of the chosen group only; ``value`` coloured, every cell a tooltip."""
    group = alt.param(name="group", value=1, bind=alt.binding_range(min=0, max=2, step=1))
    return (
        alt.Chart(alt.Data(name=key))
        .transform_filter("datum.group == group && datum.value >= datum.row / 100")
        .mark_rect()
        .encode(x="col:O", y="row:O", color="value:Q", tooltip=["group:O", "row:O", "col:O"])
        .add_params(group)
    )


def grid_rows(cells: int, groups: int = 3) -> dict[str, list]:
    """``cells`` rows for each of ``groups`` groups."""
    n = cells * groups
    return {
        "group": [i // cells for i in range(n)],
        "row": [(i % cells) // 10 for i in range(n)],
        "col": [i % 10 for i in range(n)],
        "value": [(i % 7) / 6 for i in range(n)],
    }


def scenegraph_items(node) -> int:
    """Items of every non-group mark in a Vega scenegraph (what the renderer draws)."""
    if isinstance(node, dict):
        own = len(node.get("items", [])) if node.get("marktype") not in (None, "group") else 0
        if node.get("role") in ("axis", "legend", "title", "axis-label", "axis-tick"):
            return 0
        return own + sum(scenegraph_items(v) for v in node.values())
    if isinstance(node, list):
        return sum(scenegraph_items(v) for v in node)
    return 0


def test_filter_on_a_widget_keeps_the_chosen_rows_only():
    rows = grid_rows(40)
    spec = build_figure(key="g", title="g", caption="c", chart=grid_chart("g"), rows=rows).spec
    # group == 1 is read (the param's initial value); a comparison of two columns is not,
    # so its rows are counted as kept
    assert default_marks(spec, rows) == 40


def test_folds_and_layers_multiply_the_rows():
    rows = {"x": [0, 1, 2, 3, 0, 1], "k": [0, 0, 0, 0, 1, 1], "a": [1] * 6, "b": [2] * 6}
    base = alt.Chart().transform_filter("datum.k == 0").transform_fold(["a", "b"])
    bars = base.mark_bar().encode(x="x:O", y="value:Q", color="key:N")
    line = base.mark_line(point=True).encode(x="x:O", y="value:Q")
    chart = alt.layer(bars, line, data=alt.Data(name="f"))
    spec = build_figure(key="f", title="f", caption="c", chart=chart, rows=rows).spec
    # 4 rows with k == 0, folded into 8; bars 8 items, line 8 vertices + 8 points
    assert default_marks(spec, rows) == 8 + 16


@pytest.mark.parametrize(
    "make",
    [
        lambda s, m: impact_scatter.scatter_figure(s),
        lambda s, m: focus.focus_figure(s, "first_focus", m),
        lambda s, m: block_impact.block_impact_figure(s),
    ],
    ids=["scatter", "focus-lines", "impact-by-position"],
)
def test_count_is_vegas_own_when_every_filter_is_read(make):
    raw = fake_sentence(n_tokens=12, n_layers=3, n_heads=2)
    manifest = typed_manifest(fake_manifest([raw], n_layers=3, n_heads=2))
    fig = make(typed_sentence(raw), manifest)
    # the page's default view: its spec with the inline rows, params at their initial values
    page_view = {**fig.spec, "data": {"values": columns_to_rows(fig.inline)}}
    drawn = scenegraph_items(vl_convert.vegalite_to_scenegraph(page_view, vl_version=VL_VERSION))
    counted = default_marks(fig.spec, fig.inline)
    if fig.key == "impact-by-position":
        # lines, first-token points (the filter "top_first_heads > 0"), invisible hover points
        n_rows = len(fig.inline["query"])
        first = sum(1 for v in fig.inline["top_first_heads"] if v > 0)
        assert 0 < first < n_rows and drawn == 2 * n_rows + first
    assert counted == drawn


@pytest.mark.parametrize("key", ["attention-breakdown", "bias-vs-position"])
def test_a_windowed_long_input_counts_the_window_only(key):
    """``datum.query >= positions_from && datum.query < positions_from + 128`` is read at
    the slider's initial value: the count is Vega's own, a window's worth of positions."""
    from attnreport.charts.figures.breakdown import bias_position_figure, breakdown_figure
    from attnreport.charts.spec.position_window import POSITION_WINDOW

    raw = fake_sentence(n_tokens=300, n_layers=2, n_heads=2)
    manifest = typed_manifest(fake_manifest([raw], n_layers=2, n_heads=2))
    build = breakdown_figure if key == "attention-breakdown" else bias_position_figure
    fig = build(typed_sentence(raw), manifest)
    page_view = {**fig.spec, "data": {"values": columns_to_rows(fig.inline)}}
    drawn = scenegraph_items(vl_convert.vegalite_to_scenegraph(page_view, vl_version=VL_VERSION))
    assert default_marks(fig.spec, fig.inline) == drawn
    terms = 4 if key == "attention-breakdown" else 2  # folded terms; + the ticks, or points
    per_position = terms + 1 if key == "attention-breakdown" else 2 * terms
    assert drawn == POSITION_WINDOW * per_position


def test_threshold_picks_svg_up_to_the_bound_and_canvas_past_it():
    cells = CANVAS_MARKS
    rows = grid_rows(cells)
    spec = build_figure(key="g", title="g", caption="c", chart=grid_chart("g"), rows=rows).spec
    assert default_marks(spec, rows) == CANVAS_MARKS
    assert choose_renderer(spec, rows) == "svg"
    more = grid_rows(cells + 1)
    assert choose_renderer(spec, more) == "canvas"


def test_build_figure_draws_big_figures_on_a_canvas_without_aria_and_same_image():
    small = build_figure(key="g", title="g", caption="c", chart=grid_chart("g"), rows=grid_rows(50))
    big_rows = grid_rows(CANVAS_MARKS + 10)
    big = build_figure(key="g", title="g", caption="c", chart=grid_chart("g"), rows=big_rows)
    assert (small.renderer, big.renderer) == ("svg", "canvas")
    assert "aria" not in small.spec["config"] and big.spec["config"]["aria"] is False
    # the image is drawn from the same static spec whichever renderer the page uses
    assert big.static_spec == static_view(small.spec, big_rows)
