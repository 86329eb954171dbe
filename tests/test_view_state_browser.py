"""One view per page, whatever asked for it (issue 40), in Chromium on the example.

The example is rendered by this checkout from the committed results (``example_render``).
On the page of each model that has every kind of control (the intervention grids' page):

- A hash with values no control can show (``#layer=99&head=-3&eps=7...``) opens one view:
  sliders at their nearest end, unknown options dropped (the default shown), the URL
  rewritten to the view shown, and the next change writes that view, not the hash's.
- Every control set to every value it offers, interactively, moves every chart that has
  it to that value, writes it to the URL, and every chart draws only rows of the chosen
  layer and head; and the drawing (every mark's place, size, colour and text, read from
  the Vega scenegraph, not pixels) is the one the same view gets when it is opened from
  the hash; and each chart's ARIA label follows its view (its alt text on the view its
  figure opens on, else its own title naming the layer and head it draws).

The page says when it is quiet (``window.attnreport.settled()``: every chart drawn, no
file loading, no fitting pass left), so nothing here sleeps a fixed time.
"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.tiers import extended

pytestmark = pytest.mark.browser

# Per chart (once the page is quiet): its key, its shared controls' values, the marks it
# draws (type, role, place, size, colours, opacity, text: what a reader sees, rounded to
# 0.1 px; each mark's items sorted), the drawn rows whose layer or head is not the chart's
# (its data rows behind marks, ``datum``, that have a numeric field of the name of one of
# its controls), and its ARIA label with the alt text of its opening view (``data-alt``).
# ``marks`` false: every mark is still walked for the stray rows, but none is listed
# (listing them is most of the call's time, and only a drawing compared needs them).
DRAWN = """async (marks = true) => {
  await window.attnreport.settled();
  const r = x => Math.round(x * 10) / 10;
  return window.attnreport.state.charts.map(chart => {
    const signals = {};
    for (const name of Object.keys(chart.shared)) signals[name] = chart.view.signal(name);
    const items = [], stray = [];
    (function walk(mark, x, y) {
      const own = [];  // the mark's items, in their place order: Vega keeps them in join order
      for (const item of mark.items || []) {
        const ix = x + (item.x || 0), iy = y + (item.y || 0);
        if (mark.marktype === 'group') {
          for (const sub of item.items || []) walk(sub, ix, iy);
          continue;
        }
        const text = [].concat(item.text === undefined ? [] : item.text).join('|');
        if (marks) own.push([mark.marktype, mark.role || '', r(ix), r(iy), r(item.width || 0),
                  r(item.height || 0), item.fill || '', item.stroke || '',
                  item.opacity === undefined ? 1 : r(item.opacity), text].join(' '));
        const datum = mark.role === 'mark' ? item.datum || {} : {};
        for (const name of ['layer', 'head']) {
          if (name in signals && typeof datum[name] === 'number' && datum[name] !== signals[name]) {
            stray.push(`${name} ${datum[name]} drawn at ${name} ${signals[name]}`);
          }
        }
      }
      items.push(...own.sort());
    })(chart.view.scenegraph().root, 0, 0);
    const opening = {};  // the values its figure opens on (its alt text describes that view)
    for (const s of chart.payload.spec.signals || []) if (s.name in signals) opening[s.name] = s.value;
    return {key: chart.key, signals, items, stray: stray.slice(0, 3), opening,
            label: chart.el.getAttribute('aria-label'), alt: chart.el.getAttribute('data-alt')};
  });
}"""

# name -> the values every control of that name offers, in its order (a slider's every
# step, a select's or radio group's options), read from the charts' bound signals.
CONTROLS = """() => {
  const out = {};
  for (const chart of window.attnreport.state.charts) {
    for (const [name, signal] of Object.entries(chart.shared)) {
      const bind = signal.bind;
      let values = bind.options;
      if (bind.input === 'range') {
        values = [];
        for (let v = bind.min; v <= bind.max; v += bind.step || 1) values.push(v);
      }
      out[name] = out[name] ? out[name].filter(v => values.includes(v)) : values;
    }
  }
  return out;
}"""


@pytest.fixture(scope="module")
def example(example_render) -> Path:
    return example_render


MODELS = ("smollm2-135m-instruct", "gemma-3-270m")
HERE = "tests/test_view_state_browser.py::"


def first_model_lands(test: str) -> list:
    """Both models; the second's run in ``make test-all`` (the pages of both are drawn by
    the same code from the same kind of results: the first model's run covers it)."""
    covered = extended(f"{HERE}{test}[{MODELS[0]}]")
    return [MODELS[0], pytest.param(MODELS[1], marks=covered)]


def grids_page(site: Path, model: str) -> Path:
    """The model's page with the intervention grids (every kind of control)."""
    pages = [p for p in sorted((site / model).glob("s*.html")) if 'data-key="scaling-grid"' in p.read_text()]  # fmt: skip
    assert len(pages) == 1, (model, pages)
    return pages[0]


@pytest.fixture(scope="module")
def context(browser):
    """One 1280 px context for the module; its pages block every request off file://."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file://") else route.abort())  # fmt: skip
    yield context
    context.close()


class Tab:
    """A page of the context, and every console error, warning and page error it logs."""

    def __init__(self, context) -> None:
        self.page = context.new_page()
        self.logged: list[str] = []
        self.openings: dict[str, dict] = {}  # url -> the view it opens on (``at_opening``)
        self.page.on("console", lambda m: m.type in ("error", "warning") and self.logged.append(m.text))  # fmt: skip
        self.page.on("pageerror", lambda e: self.logged.append(f"pageerror: {e}"))

    def open(self, url: str) -> list[dict]:
        """``url`` loaded afresh (a new hash alone would not reload it), once quiet."""
        self.page.goto("about:blank")
        self.page.goto(url)
        self.page.wait_for_function("() => window.attnreport && window.attnreport.settled")
        return self.drawn()

    def at_opening(self, url: str) -> dict:
        """The view ``url`` opens on (no hash), shown in this tab: loaded afresh, unless
        the tab shows ``url`` in that view already (each sweep below ends on it)."""
        opening = self.openings.get(url)
        if opening is None or self.page.url.partition("#")[0] != url or one_view(self.drawn(marks=False)) != opening:  # fmt: skip
            self.openings[url] = one_view(self.open(url))
        return self.openings[url]

    def drawn(self, marks: bool = True) -> list[dict]:
        """Every chart as ``DRAWN`` reads it; ``marks`` False: without its marks' list."""
        return self.page.evaluate(DRAWN, marks)

    def hash(self) -> str:
        return self.page.evaluate("location.hash")


@pytest.fixture(scope="module")
def tabs(context):
    tabs = (Tab(context), Tab(context))
    yield tabs
    for tab in tabs:
        tab.page.close()


def one_view(drawn: list[dict]) -> dict:
    """The page's one view: every chart that has a control shows the same value; no chart
    draws rows of another layer or head than its controls'."""
    view: dict = {}
    for chart in drawn:
        for name, value in chart["signals"].items():
            assert view.setdefault(name, value) == value, (chart["key"], name, value, view)
        assert chart["stray"] == [], chart["key"]
    return view


def hash_of(view: dict) -> str:
    return "&".join(f"{name}={quote(str(value))}" for name, value in view.items())


@pytest.mark.parametrize(
    "model",
    first_model_lands("test_a_hash_out_of_range_opens_one_view_and_the_url_is_rewritten_to_it"),
)
def test_a_hash_out_of_range_opens_one_view_and_the_url_is_rewritten_to_it(example, tabs, model):
    tab = tabs[0]
    url = grids_page(example, model).as_uri()
    default = one_view(tab.open(url))
    assert set(default) == {"layer", "head", "sort_idx", "observation", "eps"}
    controls = tab.page.evaluate(CONTROLS)
    asked = "#layer=99&head=-3&sort_idx=7&eps=5&observation=sideways&positions_from=2"
    view = one_view(tab.open(url + asked))
    last = controls["layer"][-1]
    assert view == {**default, "layer": last, "head": 0}, view  # clamped; the rest dropped
    assert tab.hash() == f"#layer={last}&head=0"  # the view shown, nothing else
    (chart,) = [c for c in tab.drawn() if c["key"] == "attention-map"]
    assert f"(layer {last}, head 0)" in chart["label"] and chart["label"] != chart["alt"]

    tab.page.locator('#ar-chart-attention-map input[name="head"]').fill("1")
    tab.page.locator('#ar-chart-attention-map input[name="head"]').dispatch_event("input")
    tab.page.wait_for_function("location.hash.includes('head=1')")
    assert one_view(tab.drawn())["head"] == 1
    assert tab.hash().startswith(f"#layer={last}&head=1")  # not the hash's layer 99

    tab.page.evaluate("location.hash = '#layer=-5&head=2.6'")  # an edited hash
    tab.page.wait_for_function("location.hash === '#layer=0&head=3'")
    view = one_view(tab.drawn())
    assert (view["layer"], view["head"]) == (0, 3)
    assert tab.logged == []


def set_control(page, name: str, index: int, value) -> None:
    """Choose ``value`` (option ``index``) on the control ``name`` of the last chart that
    has one, as a reader does: drag a slider, pick an option, check a radio button."""
    control = page.locator(f".ar-chart [name={name}]").last
    kind = control.evaluate("e => e.tagName + ' ' + (e.type || '')")
    if kind == "INPUT range":
        control.fill(str(value))
        control.dispatch_event("input")
    elif kind.startswith("SELECT"):
        control.select_option(index=index)
    else:
        chart = page.locator(".ar-chart").filter(has=page.locator(f"[name={name}]")).last
        chart.locator(f"input[name={name}]").nth(index).check()


def assert_labels_follow(drawn: list[dict], name: str, value) -> None:
    """Each chart with control ``name`` is labelled for the view it draws: its alt text on
    the view its figure opens on, else its title naming the view (a layer or head by number)."""
    for chart in drawn:
        if name not in chart["signals"]:
            continue
        if chart["signals"] == chart["opening"]:
            assert chart["label"] == chart["alt"], (name, value, chart["key"])
            continue
        assert chart["label"] != chart["alt"], (name, value, chart["key"])
        if name in ("layer", "head") and "(" in chart["label"]:
            assert f"{name} {value}" in chart["label"], (name, value, chart["label"])


def assert_same_drawing(mine: list[dict], theirs: list[dict], what) -> None:
    """Every chart of ``mine`` shows the values and marks of the same chart of ``theirs``."""
    opened = {chart["key"]: chart for chart in theirs}
    assert sorted(opened) == sorted(chart["key"] for chart in mine), what
    for chart in mine:
        other = opened[chart["key"]]
        assert chart["signals"] == other["signals"], (what, chart["key"])
        moved = [(a, b) for a, b in zip(chart["items"], other["items"], strict=False) if a != b]
        assert len(chart["items"]) == len(other["items"]) and not moved, (what, chart["key"], moved[:3])  # fmt: skip


# Values whose drawing is compared with the same view opened from the hash: every option
# of a select or radio group, a slider's ends and its middle.
def compared(values: list) -> list:
    if isinstance(values[0], str) or len(values) <= 4:
        return values
    return [values[0], values[len(values) // 2], values[-1]]


# Every change sweeps one control of each kind (the head's slider, the target's select, the
# observed layer's radio buttons); the layer's slider (30 steps on the default model) and
# the scale factor's select, drawn, written and compared by the same code, in test-all.
SWEPT = "test_every_control_at_every_value_draws_what_its_hash_draws"
BY_KIND = {"layer": "head", "eps": "sort_idx"}  # -> the landing sweep of its kind


@pytest.mark.parametrize(
    "name",
    [
        "head",
        "sort_idx",
        "observation",
        *(
            pytest.param(n, marks=extended(f"{HERE}{SWEPT}[{BY_KIND[n]}]"))
            for n in ("layer", "eps")
        ),
    ],
)
def test_every_control_at_every_value_draws_what_its_hash_draws(example, tabs, name):
    tab, fresh = tabs
    url = grids_page(example, MODELS[0]).as_uri()
    start = tab.at_opening(url)[name]
    values = tab.page.evaluate(CONTROLS)[name]
    assert len(values) >= 3, values
    first = values.index(start) + 1
    for value in values[first:] + values[:first]:  # every value, the opening one last
        index = values.index(value)
        set_control(tab.page, name, index, value)
        tab.page.wait_for_function(
            "([name, value]) => location.hash.includes(name + '=' + encodeURIComponent(value))",
            arg=[name, value],
        )
        drawn = tab.drawn(marks=value in compared(values))
        view = one_view(drawn)
        assert view[name] == value, (name, value, view)
        assert tab.hash() == "#" + hash_of(view)
        assert_labels_follow(drawn, name, value)
        if value in compared(values):
            assert_same_drawing(drawn, fresh.open(url + tab.hash()), (name, value))
    assert tab.logged == [] and fresh.logged == []


# ---- Every head on an index opens its sentence page at that head ------------------------

# Per chart of the page: each drawn mark that stands for one row (a point, a cell) whose
# row names a head: the chart, the row's layer, head, link and tooltip text.
HEADS = """() => window.attnreport.state.charts.flatMap(chart => {
  const out = [];
  (function walk(mark) {
    for (const item of mark.items || []) {
      if (mark.marktype === 'group') {
        for (const sub of item.items || []) walk(sub);
      } else if (mark.role === 'mark' && ['symbol', 'rect'].includes(mark.marktype)) {
        const d = item.datum || {};
        if (typeof d.head === 'number') {
          out.push({key: chart.key, layer: d.layer, head: d.head, href: d.href || null,
                    opens: d.opens || null});
        }
      }
    }
  })(chart.view.scenegraph().root);
  return out;
})"""

# One uncovered mark of chart KEY whose row links somewhere: its link and its centre.
TARGET = """key => {
  const LINKING = ['symbol', 'rect'];  // a line or an area stands for many rows
  const chart = window.attnreport.state.charts.find(c => c.key === key);
  let found = null;
  (function walk(mark) {
    for (const item of mark.items || []) {
      if (found) return;
      if (mark.marktype === 'group') {
        for (const sub of item.items || []) walk(sub);
      } else if (LINKING.includes(mark.marktype) && mark.role === 'mark' && item.datum.href) {
        item._svg.scrollIntoView({block: 'center'});
        const r = item._svg.getBoundingClientRect();
        const x = r.left + r.width / 2, y = r.top + r.height / 2;
        if (r.width > 2 && document.elementFromPoint(x, y) === item._svg) {
          found = {href: item.datum.href, x, y};
        }
      }
    }
  })(chart.view.scenegraph().root);
  return found;
}"""

INDEX_FIGURES = {
    "set-self-focus", "set-first-focus", "set-sink-rate", "set-concentration",
    "set-head-impact", "head-atlas", "induction-vs-previous",
}  # fmt: skip


def controls_of(page: Path) -> dict[str, dict]:
    """The bound signals of a page's attention map (its layer and head controls), read
    from the page's payload."""
    html = page.read_text()
    at = html.index('id="ar-data-attention-map">') + len('id="ar-data-attention-map">')
    spec = json.loads(html[at : html.index("</script>", at)])["spec"]
    return {s["name"]: s["bind"] for s in spec["signals"] if s.get("bind")}


@pytest.mark.parametrize(
    "model", first_model_lands("test_every_head_on_the_index_opens_a_sentence_page_at_that_head")
)
def test_every_head_on_the_index_opens_a_sentence_page_at_that_head(example, tabs, model):
    tab = tabs[0]
    index = example / model / "index.html"
    tab.open(index.as_uri())
    heads = tab.page.evaluate(HEADS)
    assert {h["key"] for h in heads} == INDEX_FIGURES
    controls: dict[str, dict] = {}
    for head in heads:  # every link: a page beside the index that can show that head
        page, _, view = head["href"].partition("#")
        assert view == f"layer={head['layer']}&head={head['head']}", head
        assert (index.parent / page).is_file(), head
        bind = controls.setdefault(page, controls_of(index.parent / page))
        assert bind["layer"]["min"] <= head["layer"] <= bind["layer"]["max"], head
        assert bind["head"]["min"] <= head["head"] <= bind["head"]["max"], head
        assert head["opens"].startswith(f"sentence {int(page[1:4])} at layer {head['layer']},")

    for key in sorted(INDEX_FIGURES):  # a click on one head of each figure opens its page
        tab.open(index.as_uri())
        target = tab.page.evaluate(TARGET, key)
        assert target is not None, key
        tab.page.mouse.move(target["x"], target["y"])
        tooltip = tab.page.locator("#vg-tooltip-element")
        tooltip.filter(has_text="click opens").wait_for()  # hover says where it goes
        with tab.page.expect_navigation():
            tab.page.mouse.click(target["x"], target["y"])
        page, _, view = target["href"].partition("#")
        assert tab.page.url == (index.parent / page).as_uri() + "#" + view
        tab.page.wait_for_function("() => window.attnreport && window.attnreport.settled")
        shown = one_view(tab.drawn())
        assert f"layer={shown['layer']}&head={shown['head']}" == view, key
    assert tab.logged == []
