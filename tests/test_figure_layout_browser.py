"""Figures fit their column and share one state per page (issue 27), in Chromium.

Pages: every page of the example, rendered by this checkout from the committed
``site/results`` (so the figures' specs are this checkout's, not those the committed pages
were built with), and a 512-token page with the default model's 9 heads, built from fake
results. At 390 px the KL panels under the intervention grids are in one column (they
re-wrap) and every figure's own drawing is at most ``MOST_SCALED`` times the window's
width (the stylesheet scales the rest down: a grid of facet rows and columns shrinks its
cells to fit, its text stays readable).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.browser import ALL_DRAWN, DRAW_MS, settle
from tests.tiers import extended

pytestmark = pytest.mark.browser
WIDTHS = (1280, 390)

# Every reason a figure would make the reader scroll sideways: a figure box or chart that
# scrolls, or a visible element inside a figure that pokes out of the window.
OVERFLOW = """() => {
  const W = document.documentElement.clientWidth;
  const bad = [];
  if (document.documentElement.scrollWidth > W) bad.push('page ' + document.documentElement.scrollWidth);
  for (const fig of document.querySelectorAll('figure.ar-figure')) {
    for (const box of [fig, ...fig.querySelectorAll('.ar-chart, .chart-wrapper')]) {
      if (box.scrollWidth > box.clientWidth + 1) {
        bad.push(`${fig.id} ${box.className} scrolls ${box.scrollWidth} > ${box.clientWidth}`);
      }
    }
    for (const el of fig.querySelectorAll('*')) {
      const r = el.getBoundingClientRect();
      if (r.width === 0 || r.height === 0) continue;  // not laid out (a closed menu)
      if (r.left < -1 || r.right > W + 1 || r.width > W) {
        const name = el.getAttribute('class') || el.tagName;
        bad.push(`${fig.id} ${name}: ${Math.round(r.left)}..${Math.round(r.right)} of ${W}`);
      }
    }
  }
  return bad;
}"""

# Per chart: its key, the values of its layer and head controls, and its title (an SVG
# chart's title text; a canvas chart's title is pixels, so its signals stand in for it).
VIEWS = """() => window.attnreport.state.charts.map(c => {
  const values = name => [...c.el.querySelectorAll(`input[name=${name}]`)].map(e => +e.value);
  const titles = [...c.el.querySelectorAll('svg .role-title-text')].map(t => t.textContent);
  const signal = name => (name in c.shared ? c.view.signal(name) : null);
  return {key: c.key, layer: values('layer'), head: values('head'),
          title: titles.length ? titles.join(' | ') : null,
          signals: {layer: signal('layer'), head: signal('head')}};
})"""


@pytest.fixture(scope="module")
def example(example_render) -> Path:
    """The example, rendered by this checkout from the committed results (once per run:
    tests/conftest.py)."""
    return example_render


def open_at(offline, url: str, width: int):
    """The page at ``url`` in a ``width`` px window, every chart drawn."""
    page = offline.page
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(url)
    page.wait_for_function(ALL_DRAWN, timeout=DRAW_MS)
    return page


def interventions_page(site: Path) -> Path:
    """The example page that shows the intervention grids (every kind of figure)."""
    return next(
        p for p in sorted(site.rglob("s*.html")) if 'data-key="scaling-grid"' in p.read_text()
    )


@pytest.mark.parametrize("width", WIDTHS)
def test_no_figure_of_the_example_scrolls_sideways(example, offline_page, width):
    for path in sorted(example.rglob("*.html")):  # each model's pages too
        page = open_at(offline_page, path.as_uri(), width)
        assert page.evaluate(OVERFLOW) == [], (path.name, width)
        drawn = page.evaluate(
            "[...document.querySelectorAll('.ar-chart')].map(e => e.dataset.rendered)"
        )
        assert set(drawn) <= {"true"}, (path.name, drawn)
    assert offline_page.errors == []


# A 512-token page at 1280 px: its map's width and labels are checked on every change by
# test_reading_browser, and every other figure's fit at 1280 px on the example's pages.
WIDE_512 = extended(
    "tests/test_reading_browser.py::test_a_512_token_map_is_drawn_at_its_column_width_with_readable_labels[1280]",
    "tests/test_figure_layout_browser.py::test_no_figure_of_the_example_scrolls_sideways[1280]",
    "tests/test_figure_layout_browser.py::test_no_figure_of_a_512_token_page_scrolls_sideways[390]",
)


@pytest.mark.slow
@pytest.mark.parametrize("width", [pytest.param(1280, marks=WIDE_512), 390])
def test_no_figure_of_a_512_token_page_scrolls_sideways(long_page, offline_page, width):
    """Every chart fits the window, re-wraps and shrinks its cells as on the example's
    pages; the attention map's 512-row triangle is drawn at its column's width (its cells
    shrink past LEAST, in runtime_fit.js; its labels are checked in
    test_reading_browser)."""
    page = open_at(offline_page, long_page.as_uri(), width)
    assert page.evaluate(OVERFLOW) == [], width
    for chart in page.evaluate(DRAWN):
        assert chart["fit"] == ("wide" if width == 1280 else "phone"), chart
        assert chart["ratio"] <= (1.01 if chart["key"] == "attention-map" else MOST_SCALED), chart
    assert kl_columns(page, "scaling-grid") == (2 if width == 1280 else 1)  # Q or K, V
    assert kl_columns(page, "mean-grid") == 1  # one input, one panel
    assert offline_page.errors == []


def test_a_hash_opens_one_view_that_every_control_moves_and_history_steps_back(
    example, offline_page
):
    page = open_at(offline_page, interventions_page(example).as_uri() + "#layer=7&head=2", 1280)
    views = page.evaluate(VIEWS)
    with_layer = [v for v in views if v["signals"]["layer"] is not None]
    with_head = [v for v in views if v["signals"]["head"] is not None]
    assert len(with_layer) >= 5 and len(with_head) >= 5  # figures 1-3, 7-9, the grids
    for v in with_layer:
        assert v["layer"] == [7] and v["signals"]["layer"] == 7, v
        assert v["title"] is None or "layer 7" in v["title"], v
    for v in with_head:
        assert v["head"] == [2] and v["signals"]["head"] == 2, v
        assert v["title"] is None or "head 2" in v["title"], v

    slider = page.locator('#ar-chart-attention-map input[name="layer"]')
    slider.fill("9")
    slider.dispatch_event("input")
    page.wait_for_function("location.hash.includes('layer=9')")
    page.wait_for_function(  # every slider follows the hash (a timeout fails as the assert)
        "[...document.querySelectorAll('input[name=layer]')].every(e => e.value === '9')",
    )
    settle(page, DRAW_MS)  # and every chart has drawn it: the titles are read below
    for v in page.evaluate(VIEWS):
        if v["signals"]["layer"] is not None:
            assert v["layer"] == [9] and v["signals"]["layer"] == 9, v
            assert v["title"] is None or "layer 9" in v["title"], v
    assert "head=2" in page.evaluate("location.hash")

    page.go_back()
    page.wait_for_function(
        "[...document.querySelectorAll('input[name=layer]')].every(e => e.value === '7')",
    )
    settle(page, DRAW_MS)
    assert {v["signals"]["layer"] for v in page.evaluate(VIEWS)} - {None} == {7}
    assert offline_page.errors == []


def test_clicking_a_head_in_a_head_level_chart_selects_it_everywhere(example, offline_page):
    page = open_at(offline_page, interventions_page(example).as_uri() + "#layer=3&head=0", 1280)
    page.locator("#ar-chart-orientation-vs-magnitude").scroll_into_view_if_needed()
    # a point of another head that no other point covers, read from its ARIA label
    found = page.evaluate(
        """() => {
      for (const p of document.querySelectorAll(
          '#ar-chart-orientation-vs-magnitude .mark-symbol.role-mark path')) {
        const r = p.getBoundingClientRect();
        const x = r.left + r.width / 2, y = r.top + r.height / 2;
        const head = /; head: (\\d+);/.exec(p.getAttribute('aria-label') || '');
        if (head && head[1] !== '0' && document.elementFromPoint(x, y) === p) {
          return [+head[1], x, y];
        }
      }
      return null;
    }"""
    )
    assert found is not None, "no uncovered point of another head"
    picked, x, y = found
    page.mouse.click(x, y)
    page.wait_for_function(
        f"[...document.querySelectorAll('input[name=head]')].every(e => e.value === '{picked}')",
    )
    page.wait_for_function(f"location.hash.includes('head={picked}')")


# ---- Re-wrapping on a phone, and again on a resize ------------------------------------

MOST_SCALED = 1.4  # a figure's own drawing is at most this many times the window's width

# Per chart: its key, its fit, and its own drawing's width over its box's width.
DRAWN = """() => [...document.querySelectorAll('.ar-chart')].map(el => {
  const marks = el.querySelector('svg.marks, canvas.marks');
  const width = marks ? parseFloat(marks.getAttribute('width')) : 0;
  return {key: el.dataset.key, fit: el.dataset.fit, ratio: width / el.clientWidth};
})"""

# Where a chart's items of the marks named NAME are, from its Vega scenegraph (a canvas
# chart has no DOM to read): their distinct left edges and tops, relative to the chart.
PLACES = """([key, name]) => {
  const chart = window.attnreport.state.charts.find(c => c.key === key);
  const xs = new Set(), ys = new Set();
  (function walk(mark, x, y) {
    for (const item of mark.items || []) {
      const ix = x + (item.x || 0), iy = y + (item.y || 0);
      if (mark.name === name || mark.role === name) { xs.add(Math.round(ix)); ys.add(Math.round(iy)); }
      for (const child of item.items || []) if (child.marktype === 'group') walk(child, ix, iy);
    }
  })(chart.view.scenegraph().root, 0, 0);
  return {xs: [...xs].sort((a, b) => a - b), ys: [...ys].sort((a, b) => a - b)};
}"""


def places(page, key: str, name: str) -> dict[str, list[int]]:
    return page.evaluate(PLACES, [key, name])


def kl_columns(page, key: str) -> int:
    """How many columns the KL panels under an intervention grid are laid out in."""
    return len(places(page, key, "kl_cell")["xs"])


def legend_below(page, key: str) -> bool:
    """Whether the legends of a single-view chart are under its plot (else beside it)."""
    plot = page.evaluate(
        """key => { const v = window.attnreport.state.charts.find(c => c.key === key).view;
        return [v.signal('width'), v.signal('height')]; }""",
        key,
    )
    legends = places(page, key, "legend")
    assert legends["xs"], key
    below = min(legends["ys"]) >= plot[1]
    beside = min(legends["xs"]) >= plot[0]
    assert below != beside, (key, plot, legends)
    return below


@pytest.mark.parametrize("width", WIDTHS)
def test_figures_are_drawn_for_the_window_and_kl_panels_rewrap(example, offline_page, width):
    for path in sorted(example.rglob("*.html")):  # each model's pages too
        page = open_at(offline_page, path.as_uri(), width)
        for chart in page.evaluate(DRAWN):
            assert chart["fit"] == ("wide" if width == 1280 else "phone"), (path.name, chart)
            assert chart["ratio"] <= (1.01 if width == 1280 else MOST_SCALED), (path.name, chart)
    page = open_at(offline_page, interventions_page(example).as_uri(), width)
    wide = width == 1280
    assert kl_columns(page, "scaling-grid") == (2 if wide else 1)
    assert kl_columns(page, "mean-grid") == (2 if wide else 1)
    assert legend_below(page, "attention-map") == (not wide)
    assert offline_page.errors == []


def test_a_resize_moves_legends_and_rewraps_facets_keeping_the_view(example, offline_page):
    """1280 -> 390 -> 1280 px: every chart is drawn again for its new width, on the page's
    state (the hash's layer and head, the layer's rows loaded again) and with no overflow."""
    page = open_at(offline_page, interventions_page(example).as_uri() + "#layer=7&head=2", 1280)
    for width, fit in ((390, "phone"), (1280, "wide")):
        page.set_viewport_size({"width": width, "height": 900})
        page.wait_for_function(
            f"""() => window.attnreport.state.charts.every(c =>
              c.el.dataset.fit === '{fit}' && !c.drawing && c.view)""",
        )
        settle(page, DRAW_MS)  # the last chart's chunk insert and shrink are done
        wide = fit == "wide"
        assert kl_columns(page, "scaling-grid") == (2 if wide else 1), width
        assert kl_columns(page, "mean-grid") == (2 if wide else 1), width
        assert legend_below(page, "attention-map") == (not wide), width
        assert page.evaluate(OVERFLOW) == [], width
        for v in page.evaluate(VIEWS):
            if v["signals"]["layer"] is not None:
                assert v["signals"]["layer"] == 7 and v["layer"] == [7], (width, v)
            if v["signals"]["head"] is not None:
                assert v["signals"]["head"] == 2 and v["head"] == [2], (width, v)
        rows = page.evaluate(
            """() => window.attnreport.state.charts.find(c => c.key === 'attention-map')
              .view.data('attention-map').filter(r => r.layer === 7).length"""
        )
        assert rows > 0, width  # layer 7's file, inserted again into the new view
    assert offline_page.errors == []


# ---- ε and the observed layer are page state -------------------------------------------

# Per intervention grid: its eps and observation signals, its checked observation radio,
# and its grid's column headers.
GRIDS = """() => window.attnreport.state.charts
  .filter(c => c.key === 'scaling-grid' || c.key === 'mean-grid')
  .map(c => {
    const radio = c.el.querySelector('input[name=observation]:checked');
    return {key: c.key, eps: 'eps' in c.shared ? c.view.signal('eps') : null,
            observation: c.view.signal('observation'), radio: radio ? radio.value : null};
  })"""


def column_headers(page, key: str) -> int:
    return len(places(page, key, "grid_column_header")["xs"])


def test_epsilon_and_observed_layer_are_in_the_hash_and_history(example, offline_page):
    url = interventions_page(example).as_uri() + "#eps=1e-3&observation=next"
    page = open_at(offline_page, url, 1280)
    grids = {g["key"]: g for g in page.evaluate(GRIDS)}
    assert grids["scaling-grid"]["eps"] == 0.001  # "1e-3" is the option 0.001
    assert all(g["observation"] == "next" and g["radio"] == "next" for g in grids.values())
    assert column_headers(page, "scaling-grid") == 2  # the unmodified run and ε = 0.001
    select = page.locator("#ar-chart-scaling-grid select[name=eps]")
    assert select.locator("option:checked").inner_text() == "\u03b5 = 0.001"

    # the URL is written as the change is made; the other charts follow it after, so each
    # check waits for the page to be quiet (on a busy machine the grids lag the hash)
    select.select_option(label="every \u03b5")
    page.wait_for_function("location.hash.includes('eps=all')")
    settle(page, DRAW_MS)
    assert column_headers(page, "scaling-grid") == 4
    page.locator("#ar-chart-mean-grid input[name=observation][value=last]").check()
    page.wait_for_function("location.hash.includes('observation=last')")
    page.wait_for_function(  # both grids' radios follow (a timeout here fails as the assert)
        "[...document.querySelectorAll('input[name=observation]:checked')]"
        ".every(e => e.value === 'last')",
    )
    settle(page, DRAW_MS)
    assert {g["radio"] for g in page.evaluate(GRIDS)} == {"last"}  # both grids follow

    page.go_back()
    page.wait_for_function(
        "[...document.querySelectorAll('input[name=observation]:checked')]"
        ".every(e => e.value === 'next')",
    )
    settle(page, DRAW_MS)
    assert column_headers(page, "scaling-grid") == 4
    page.go_back()
    page.wait_for_function(
        "window.attnreport.state.charts.find(c => c.key === 'scaling-grid')"
        ".view.signal('eps') === 0.001",
    )
    settle(page, DRAW_MS)  # the grid is drawn again for it
    assert column_headers(page, "scaling-grid") == 2
    assert offline_page.errors == []
