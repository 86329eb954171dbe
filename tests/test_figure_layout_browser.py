"""Figures fit their column and share one state per page (issue 27), in Chromium.

Pages: every page of the committed example, with this checkout's runtime and stylesheet
(the example's own copies are regenerated with it), and a 512-token page with the default
model's 9 heads, built from fake results.
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from attnreport.charts.export.embed import runtime_js
from attnreport.site.render import template_asset
from tests.fixtures.fake_results import fake_study
from tests.test_browser import ALL_DRAWN, EXAMPLE, OPTIONS, build

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
def example(tmp_path_factory) -> Path:
    """The committed example with this checkout's runtime.js and style.css."""
    folder = tmp_path_factory.mktemp("example") / "site"
    shutil.copytree(EXAMPLE, folder)
    (folder / "assets" / "runtime.js").write_text(runtime_js(), encoding="utf-8")
    (folder / "assets" / "style.css").write_bytes(template_asset("style.css"))
    return folder


@pytest.fixture(scope="module")
def long_page(tmp_path_factory) -> Path:
    """A 512-token sentence page with the default model's 9 heads (4 layers, not 30: the
    width of a figure depends on the tokens and heads; 30 layers take minutes to fake),
    with the intervention grids."""
    study = fake_study(1, n_layers=4, n_heads=9, n_tokens=512)
    site = build(study, tmp_path_factory.mktemp("long") / "site", replace(OPTIONS, images=False))
    return next(site.glob("s000*.html"))


def open_at(offline, url: str, width: int):
    page = offline.page
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(url)
    page.wait_for_function(ALL_DRAWN, timeout=60_000)
    return page


def interventions_page(site: Path) -> Path:
    """The example page that shows the intervention grids (every kind of figure)."""
    return next(
        p for p in sorted(site.glob("s*.html")) if 'data-key="scaling-grid"' in p.read_text()
    )


@pytest.mark.parametrize("width", WIDTHS)
def test_no_figure_of_the_example_scrolls_sideways(example, offline_page, width):
    for path in sorted(example.glob("*.html")):
        page = open_at(offline_page, path.as_uri(), width)
        assert page.evaluate(OVERFLOW) == [], (path.name, width)
        drawn = page.evaluate(
            "[...document.querySelectorAll('.ar-chart')].map(e => e.dataset.rendered)"
        )
        assert set(drawn) <= {"true"}, (path.name, drawn)
    assert offline_page.errors == []


@pytest.mark.slow
@pytest.mark.parametrize("width", WIDTHS)
def test_no_figure_of_a_512_token_page_scrolls_sideways(long_page, offline_page, width):
    page = open_at(offline_page, long_page.as_uri(), width)
    assert page.evaluate(OVERFLOW) == [], width
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
    page.wait_for_function("location.hash.includes('layer=9')", timeout=10_000)
    for v in page.evaluate(VIEWS):
        if v["signals"]["layer"] is not None:
            assert v["layer"] == [9] and v["signals"]["layer"] == 9, v
            assert v["title"] is None or "layer 9" in v["title"], v
    assert "head=2" in page.evaluate("location.hash")

    page.go_back()
    page.wait_for_function(
        "[...document.querySelectorAll('input[name=layer]')].every(e => e.value === '7')",
        timeout=10_000,
    )
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
        timeout=10_000,
    )
    page.wait_for_function(f"location.hash.includes('head={picked}')", timeout=10_000)
