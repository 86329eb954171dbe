"""Pages read on a phone and on a desktop, in Chromium: measured boxes, not screenshots.

- A long input's attention map is drawn at its column's width (its cells shrink, its text
  does not), not drawn wider and scaled down by the stylesheet; its axis labels keep
  their size and thin out instead of overlapping.
- Figure 10 (impact by position) keeps most of its column for its plot on a phone, and
  its token labels do not run into each other.
- The comparison's tables keep every number whole on a phone: a table wider than the
  column scrolls inside its own box, never the page.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from attnreport.charts.figures.comparison import KL_KEY, ROLES_KEY
from tests.browser import settle
from tests.test_figure_layout_browser import open_at as layout_open_at

pytestmark = pytest.mark.browser
WIDTHS = (1280, 390)

# One chart's drawing: its own width (CSS px), the width it is shown at, the room its box
# gives it (less the actions menu's padding), its plot's width (the "width" signal), and
# per axis the visible labels' font sizes and boxes, from the Vega scenegraph.
DRAWING = """key => {
  const chart = window.attnreport.state.charts.find(c => c.key === key);
  const el = chart.el, marks = el.querySelector('svg.marks, canvas.marks');
  const style = getComputedStyle(el);
  const room = el.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
  let plot = 0;
  try { plot = chart.view.signal('width'); } catch (e) { plot = 0; }
  const axes = [];
  (function walk(mark) {
    for (const item of mark.items || []) {
      if (mark.role === 'axis-label') {
        const shown = mark.items.filter(i => i.opacity !== 0 && i.text !== '');
        axes.push(shown.map(i => ({size: i.fontSize, angle: i.angle || 0, x: i.x, y: i.y,
          box: [i.bounds.x1, i.bounds.x2, i.bounds.y1, i.bounds.y2]})));
        return;
      }
      for (const child of item.items || []) walk(child);
    }
  })(chart.view.scenegraph().root);
  const own = marks.tagName === 'CANVAS' ? (parseFloat(marks.style.width) || marks.width)
                                         : parseFloat(marks.getAttribute('width'));
  return {own, shown: marks.getBoundingClientRect().width, room, plot, axes};
}"""


def overlapping(labels: list[dict]) -> list[tuple[int, int]]:
    """Pairs of one axis's labels drawn over each other. Level labels: their boxes (x1, x2,
    y1, y2) overlap by more than half a pixel. Turned labels (all at one angle, anchored
    along the axis) are parallel lines of text: two overlap when their anchors are closer
    than 3/4 of the font size across the text's direction (a turned label's box is not
    its text's: the boxes of labels 20 px apart at -60 degrees overlap, their text not)."""
    out = []
    for i, a in enumerate(labels):
        for j in range(i + 1, len(labels)):
            b = labels[j]
            if a["angle"] % 180:
                t = math.radians(a["angle"])
                across = abs((b["x"] - a["x"]) * -math.sin(t) + (b["y"] - a["y"]) * math.cos(t))
                if across < 0.75 * min(a["size"], b["size"]):
                    out.append((i, j))
                continue
            p, q = a["box"], b["box"]
            if min(p[1], q[1]) - max(p[0], q[0]) > 0.5 and min(p[3], q[3]) - max(p[2], q[2]) > 0.5:  # fmt: skip
                out.append((i, j))
    return out


def open_at(offline, url: str, width: int):
    page = layout_open_at(offline, url, width)
    settle(page)  # the last shrink pass has run
    return page


def assert_drawn_for_its_column(drawing: dict, what: str) -> None:
    """Drawn no wider than its box gives it, and shown at its own size (not scaled)."""
    assert drawing["own"] <= drawing["room"] + 1, (what, drawing["own"], drawing["room"])
    assert abs(drawing["shown"] - drawing["own"]) <= 1, (what, drawing["shown"], drawing["own"])


def assert_labels_readable(drawing: dict, what: str, least: int = 2) -> None:
    """Every axis shows at least ``least`` labels, at 9 px or more, none over another."""
    assert drawing["axes"], what
    for labels in drawing["axes"]:
        assert len(labels) >= least, (what, len(labels))
        assert min(label["size"] for label in labels) >= 9, what
        assert overlapping(labels) == [], what


@pytest.fixture(scope="module")
def example(example_render) -> Path:
    """The example (two models and their comparison), rendered by this checkout (once per
    run: tests/conftest.py)."""
    return example_render


@pytest.mark.slow
@pytest.mark.parametrize("width", WIDTHS)
def test_a_512_token_map_is_drawn_at_its_column_width_with_readable_labels(
    long_page, offline_page, width
):
    """``long_page``: 512 tokens of 9 heads (tests/conftest.py); the map's size depends on
    the tokens."""
    page = open_at(offline_page, long_page.as_uri(), width)
    drawing = page.evaluate(DRAWING, "attention-map")
    assert_drawn_for_its_column(drawing, width)
    assert drawing["plot"] >= 0.5 * drawing["room"], (width, drawing["plot"], drawing["room"])
    assert_labels_readable(drawing, width, least=8)
    assert offline_page.errors == []


@pytest.mark.parametrize("width", WIDTHS)
def test_impact_by_position_keeps_its_column_and_its_labels_apart(example, offline_page, width):
    """Figure 10 of the example's longest sentence (29-30 tokens), for each model."""
    for path in sorted(example.glob("*/s005-*.html")):
        page = open_at(offline_page, path.as_uri(), width)
        drawing = page.evaluate(DRAWING, "impact-by-position")
        what = (path.parent.name, width)
        assert_drawn_for_its_column(drawing, what)
        assert drawing["plot"] >= 0.6 * drawing["room"], (what, drawing["plot"], drawing["room"])
        assert_labels_readable(drawing, what)
    assert offline_page.errors == []


# Per table of the page: every run of digits (with its separators) that is drawn on more
# than one line; the table's and its scroll box's widths; the page's width.
NUMBERS = r"""() => {
  const split = [], tables = [];
  for (const table of document.querySelectorAll('article table')) {
    const box = table.parentElement;
    tables.push({box: box.className, boxWidth: box.clientWidth,
                 scrolls: getComputedStyle(box).overflowX, width: table.scrollWidth});
    const walker = document.createTreeWalker(table, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (const m of node.data.matchAll(/\d[\d,.]*\d/g)) {
        const range = document.createRange();
        range.setStart(node, m.index);
        range.setEnd(node, m.index + m[0].length);
        const lines = new Set([...range.getClientRects()].map(r => Math.round(r.top)));
        if (lines.size > 1) split.push(m[0]);
      }
    }
  }
  return {split, tables, page: document.documentElement.scrollWidth,
          window: document.documentElement.clientWidth};
}"""


@pytest.mark.parametrize("width", WIDTHS)
def test_the_comparison_tables_keep_numbers_whole(example, offline_page, width):
    page = open_at(offline_page, (example / "index.html").as_uri(), width)
    found = page.evaluate(NUMBERS)
    assert found["split"] == [], (width, found["split"])
    assert len(found["tables"]) == 2, found  # the models and the claims
    for table in found["tables"]:
        assert table["box"] == "table-scroll" and table["scrolls"] == "auto", table
    assert found["page"] <= found["window"], found  # a wide table scrolls in its box
    cells = page.locator("table.models tbody td").all_inner_texts()
    assert any(re.fullmatch(r"\d{1,3}(,\d{3})+", c) for c in cells), cells  # the parameters
    assert offline_page.errors == []


@pytest.mark.parametrize("width", WIDTHS)
def test_every_bar_of_the_comparison_is_named_on_a_phone(example, offline_page, width):
    """The comparison's bar charts (head roles, the interventions' KL) name every category
    on their x axis at both widths: on a phone the names turn upright rather than thin
    out (a bar left unnamed could not be read), and no two overlap."""
    page = open_at(offline_page, (example / "index.html").as_uri(), width)
    for key in (ROLES_KEY, KL_KEY):
        domain = page.evaluate(
            "key => window.attnreport.state.charts.find(c => c.key === key).view.scale('x')"
            ".domain()",
            key,
        )
        drawing = page.evaluate(DRAWING, key)
        assert_drawn_for_its_column(drawing, (key, width))
        assert_labels_readable(drawing, (key, width))
        shown = sorted(len(labels) for labels in drawing["axes"])
        assert len(domain) >= 5 and len(domain) in shown, (key, width, domain, shown)
    assert offline_page.errors == []
