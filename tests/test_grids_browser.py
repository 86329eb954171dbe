"""The intervention grids in Chromium (issue 40): every control, moved by hand, draws what
a page opened on the same view (its URL hash) draws; on a phone each grid is one column
of wide maps with no text overlapping; no Vega warning while they wait for their data.

Pages: the committed example rendered by this checkout (``example_render``). Drawings
are compared through Vega's scenegraph (every mark's place, text and row), not pixels,
so a canvas chart is read as an SVG one is.
"""

from __future__ import annotations

import json

import pytest

from tests.browser import ALL_DRAWN, DRAW_MS, settle
from tests.test_figure_layout_browser import interventions_page
from tests.tiers import extended

pytestmark = pytest.mark.browser
GRIDS = ("scaling-grid", "mean-grid", "mean-grid-before-rotation")
MIN_MAP = 120  # px: the narrowest a map of a grid may be drawn on a phone
# A signal of the scaling grid's view (``GRID_SIGNAL % name``).
GRID_SIGNAL = "window.attnreport.state.charts.find(c => c.key === 'scaling-grid').view.signal('%s')"

# One chart's drawing: every mark item's kind, place (px, relative to the chart) and what
# it shows (a text's words, a row's fields), from Vega's scenegraph; and, for the grids'
# maps, the width of each facet cell's map and the text boxes that overlap (by more than
# 2 px both ways: the boxes carry the font's line height, wider than its glyphs).
SCENE = """(key) => {
  const chart = window.attnreport.state.charts.find(c => c.key === key);
  const items = [], texts = [], maps = new Map();
  const FIELDS = ['target', 'eps', 'sentence', 'head', 'observation', 'query', 'key', 'prob', 'kl'];
  (function walk(mark, ox, oy, cell) {
    for (const item of mark.items || []) {
      const b = item.bounds || {x1: 0, y1: 0, x2: 0, y2: 0};
      const box = [ox + b.x1, oy + b.y1, ox + b.x2, oy + b.y2].map(v => Math.round(v * 2) / 2);
      if (mark.marktype === 'group') {
        const inner = mark.role === 'cell' || mark.role === 'scope' ? item : cell;
        for (const child of item.items || []) walk(child, ox + (item.x || 0), oy + (item.y || 0), inner);
        continue;
      }
      const datum = item.datum || {};
      const row = FIELDS.filter(f => f in datum).map(f => f + '=' + datum[f]).join(',');
      const text = item.text === undefined ? '' : [].concat(item.text).join(' ');
      items.push([mark.marktype, mark.role || '', box.join(' '), text, row].join('|'));
      if (mark.marktype === 'text' && text && item.opacity !== 0) texts.push([text, box]);
      if (mark.marktype === 'rect' && 'prob' in datum) {
        const m = maps.get(cell) || [Infinity, -Infinity];
        maps.set(cell, [Math.min(m[0], box[0]), Math.max(m[1], box[2])]);
      }
    }
  })(chart.view.scenegraph().root, 0, 0, null);
  const marks = chart.el.querySelector('svg.marks, canvas.marks');
  const own = (marks.tagName === 'CANVAS' ? parseFloat(marks.style.width) : 0) ||
    parseFloat(marks.getAttribute('width'));
  const k = marks.getBoundingClientRect().width / own;  // the stylesheet's scaling
  const overlaps = [];
  texts.forEach(([a, p], i) => texts.slice(i + 1).forEach(([b, q]) => {
    const w = Math.min(p[2], q[2]) - Math.max(p[0], q[0]);
    const h = Math.min(p[3], q[3]) - Math.max(p[1], q[1]);
    if (w > 2 && h > 2) overlaps.push([a, b]);
  }));
  return {items: items.sort(), fit: chart.fit, overlaps: overlaps,
          maps: [...maps.values()].map(m => [Math.round(m[0]), (m[1] - m[0]) * k]),
          signals: Object.fromEntries(Object.keys(chart.shared).map(n => [n, chart.view.signal(n)]))};
}"""


def scene(page, key: str) -> dict:
    """The chart's drawing once the page has settled (``settle``: every chart drawn after
    every view ran, nothing loading or waiting to be drawn again), read until it reads the
    same twice (each read after the page said it was quiet again, not after a fixed time)."""
    last = None
    for _ in range(10):
        settle(page, DRAW_MS)
        now = page.evaluate(SCENE, key)
        if now == last:
            return now
        last = now
    raise AssertionError(f"{key} did not settle")


def open_page(context, url: str, width: int):
    page = context.new_page()
    page.set_viewport_size({"width": width, "height": 900})
    warnings: list[str] = []
    page.on("console", lambda m: m.type in ("warning", "error") and warnings.append(m.text))
    page.goto(url)
    page.wait_for_function(ALL_DRAWN, timeout=DRAW_MS)
    return page, warnings


def set_head(page, key: str, head: int) -> None:
    page.evaluate(
        """([key, head]) => {
          const input = document.querySelector(`#ar-chart-${key} input[name=head]`);
          input.value = head;
          input.dispatchEvent(new Event('input', {bubbles: true}));
        }""",
        [key, head],
    )


# (control, value) moved by hand in turn; each view is then opened from its hash
STEPS = {
    1280: [
        ("eps", "\u03b5 = 0.5"), ("eps", "\u03b5 = 0.001"), ("eps", "\u03b5 = 1e-10"),
        ("observation", "next"), ("eps", "every \u03b5"), ("head", 1), ("observation", "last"),
        ("observation", "same"),
    ],
    390: [("eps", "\u03b5 = 0.001"), ("observation", "next"), ("head", 2), ("eps", "every \u03b5")],
}  # fmt: skip


def move(page, control: str, value) -> None:
    """Move one control of the scaling grid (every grid that has it follows)."""
    chart = "#ar-chart-scaling-grid"
    if control == "eps":
        page.locator(f"{chart} select[name=eps]").select_option(label=value)
    elif control == "head":
        set_head(page, "scaling-grid", value)
    else:
        page.locator(f"{chart} input[name={control}][value='{value}']").check()


# On a phone, each control moves once (every kind: the select, the slider, the radio
# buttons); at 1280 px, every scale factor and observed layer, in test-all.
SWEEP = "tests/test_grids_browser.py::test_every_grid_control_draws_what_the_same_view_opened_from_its_hash_draws[390]"  # fmt: skip


@pytest.mark.parametrize("width", [pytest.param(1280, marks=extended(SWEEP)), 390])
def test_every_grid_control_draws_what_the_same_view_opened_from_its_hash_draws(
    example_render, browser, width
):
    url = interventions_page(example_render).as_uri()
    context = browser.new_context()
    try:
        page, warnings = open_page(context, url, width)
        for control, value in STEPS[width]:
            move(page, control, value)
            drawn = {key: scene(page, key) for key in GRIDS}
            page.wait_for_function("() => location.hash === window.attnreport.state.hash()")
            view = page.evaluate("location.hash")
            fresh, fresh_warnings = open_page(context, url + view, width)
            for key in GRIDS:
                again = scene(fresh, key)
                assert drawn[key]["signals"] == again["signals"], (control, value, key)
                assert drawn[key]["items"] == again["items"], (control, value, key, view)
            assert fresh_warnings == [], view
            fresh.close()
        assert warnings == []
    finally:
        context.close()


def test_on_a_phone_each_grid_is_one_column_of_wide_maps_with_no_text_overlapping(
    example_render, browser
):
    """At 390 px: each map at least ``MIN_MAP`` px wide (the committed example's grids drew
    them about 30 px wide), one a row, no two texts overlapping (headers, axis titles,
    legends); at 1280 px the whole grid, one column per scale factor and per tensor."""
    context = browser.new_context()
    try:
        url = interventions_page(example_render).as_uri()
        page, warnings = open_page(context, url, 390)
        for key in GRIDS:
            drawn = scene(page, key)
            assert drawn["fit"] == "phone", key
            assert drawn["overlaps"] == [], key
            widths = [width for _, width in drawn["maps"]]
            assert widths and min(widths) >= MIN_MAP, (key, widths)
            assert len({left for left, _ in drawn["maps"]}) == 1, key  # one column of maps
        assert warnings == []
        page, warnings = open_page(context, url, 1280)
        maps = {key: scene(page, key)["maps"] for key in GRIDS}
        assert (
            len(maps["scaling-grid"]) == 2 * 4
        )  # Q or K (one intervention), V by the unmodified run and 3 factors
        assert len(maps["mean-grid"]) == 3 * 4  # 3 inputs by the unmodified run, Q, K, V
        assert len(maps["mean-grid-before-rotation"]) == 3 * 3  # ... and Q, K
        assert warnings == []
    finally:
        context.close()


def test_on_a_phone_the_tensor_control_picks_the_maps_and_outlives_a_redraw(
    example_render, browser
):
    """The tensor each grid shows on a phone is its own control (a grid of the mean before
    the rotation has no V): choosing V draws V's maps beside the unmodified run, and a
    scale factor chosen after it (the grid is drawn again) keeps V."""
    context = browser.new_context()
    try:
        page, warnings = open_page(context, interventions_page(example_render).as_uri(), 390)
        page.locator("#ar-chart-scaling-grid input[name=tensor][value=V]").check()
        page.wait_for_function(f"() => {GRID_SIGNAL % 'tensor'} === 'V'")
        drawn = scene(page, "scaling-grid")
        targets = {f.split("=")[1] for i in drawn["items"] for f in i.split("|")[4].split(",")
                   if f.startswith("target=") and "prob=" in i}  # fmt: skip
        assert targets == {"V"}  # the unmodified run's rows are V's copy of it
        assert len(drawn["maps"]) == 4
        move(page, "eps", "\u03b5 = 0.001")
        page.wait_for_function(f"() => {GRID_SIGNAL % 'eps'} === 0.001")
        drawn = scene(page, "scaling-grid")
        assert page.evaluate(f"() => {GRID_SIGNAL % 'tensor'}") == "V"
        assert len(drawn["maps"]) == 2  # the unmodified run and ε = 0.001
        assert warnings == []
    finally:
        context.close()


def test_the_grids_warn_of_nothing_while_their_rows_load(example_render, browser):
    """A view whose rows are in a data file not loaded yet (another head, the last layer):
    the grids draw nothing for it until they arrive, without a Vega warning."""
    context = browser.new_context()
    try:
        url = interventions_page(example_render).as_uri() + "#head=3&observation=last"
        page, warnings = open_page(context, url, 1280)
        for key in GRIDS:
            assert scene(page, key)["signals"]["head"] == 3
        assert warnings == [], json.dumps(warnings)
    finally:
        context.close()
