"""The written site in a real Chromium from file://, with the network blocked."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from attnreport.site import SiteOptions, assemble_site, write_site
from attnreport.text import display_token
from tests.browser import ALL_DRAWN
from tests.fixtures.fake_results import fake_study
from tests.site_helpers import HOSTILE_TOKENS, hostile_study, site_charts

pytestmark = pytest.mark.browser
OPTIONS = SiteOptions(title="Browser test", date="2026-11-21", authors=("Ada",))


def build(study, folder: Path, options: SiteOptions = OPTIONS) -> Path:
    write_site(assemble_site(study, options, site_charts()), folder)
    return folder


EXAMPLE = Path(__file__).resolve().parent.parent / "site"


@pytest.fixture(scope="module", params=["fake", "example"])
def site(request, tmp_path_factory) -> Path:
    """A small site from fake results, and the committed example report (real model)."""
    if request.param == "example":
        return EXAMPLE
    return build(fake_study(2, n_layers=3, n_heads=2), tmp_path_factory.mktemp("s") / "site")


@pytest.fixture(scope="module")
def hostile_site(tmp_path_factory) -> Path:
    options = replace(OPTIONS, images=False)  # images are not what this site tests
    return build(hostile_study(), tmp_path_factory.mktemp("h") / "site", options)


def open_page(offline, path: Path):
    page = offline.page
    page.goto(path.as_uri())
    page.wait_for_function(ALL_DRAWN)
    return page


def page_paths(site: Path) -> list[Path]:
    """Every page: the top level's, and each model's of a site of several (``MODEL/``)."""
    return sorted(site.glob("*.html")) + sorted(site.glob("*/*.html"))


def chart_has_marks(page, chart) -> bool:
    return page.evaluate(
        """el => {
            const svg = el.querySelector('svg.marks');
            if (svg) return svg.querySelectorAll('path, rect, line, text').length > 0;
            const canvas = el.querySelector('canvas');
            return !!canvas && canvas.width > 0 && canvas.height > 0;
        }""",
        chart,
    )


def test_every_page_draws_every_chart_without_errors(site: Path, offline_page):
    assert len(page_paths(site)) >= 4  # index, 404 and the sentences
    for path in page_paths(site):
        page = open_page(offline_page, path)
        charts = page.query_selector_all(".ar-chart")
        if path.name not in ("404.html",):
            assert charts, path.name
        for chart in charts:
            assert chart.get_attribute("data-rendered") == "true", (path.name, chart)
            assert chart_has_marks(page, chart), (path.name, chart.get_attribute("data-key"))
        assert page.locator("h1").count() == 1
    assert offline_page.errors == [] and offline_page.dialogs == []
    assert offline_page.blocked == []


def heatmap(page):
    """The first chart drawn with many rect marks (a token-by-token heatmap)."""
    for chart in page.query_selector_all(".ar-chart"):
        if len(chart.query_selector_all("g.mark-rect.role-mark path")) >= 9:
            return chart
    raise AssertionError("no heatmap on the page")


def hover(page, element) -> None:
    """Move the mouse to the middle of ``element`` (even if another mark lies on top)."""
    element.scroll_into_view_if_needed()
    box = element.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)


def sentence_page(site: Path, index: int) -> Path:
    return next(site.rglob(f"s{index:03d}*.html"))  # (the first model's, of several)


def test_hovering_a_heatmap_cell_shows_its_tokens(site: Path, offline_page):
    page = open_page(offline_page, sentence_page(site, 0))
    tokens = [t.strip() for t in page.locator(".tok").all_inner_texts() if t.strip()]
    cells = heatmap(page).query_selector_all("g.mark-rect.role-mark path")
    boxes = [(cell, cell.bounding_box()) for cell in cells]
    cells = [c for c, box in boxes if box and box["width"] >= 2 and box["height"] >= 2]
    hover(page, cells[len(cells) // 2])  # a cell with an area (a bar of 0 has none to hover)
    tooltip = page.locator("#vg-tooltip-element")
    tooltip.wait_for(state="visible")
    text = tooltip.inner_text()
    assert any(token in text for token in tokens), text
    assert offline_page.errors == []


def change_widget(page, chart) -> None:
    """Move the chart's first select or range widget (layer) to another value."""
    select = chart.query_selector(".vega-bindings select")
    if select is not None:
        options = select.eval_on_selector_all("option", "os => os.map(o => o.value)")
        current = select.evaluate("s => s.value")
        select.select_option(next(o for o in options if o != current))
        return
    slider = chart.query_selector(".vega-bindings input[type=range]")
    assert slider is not None, "the chart has no widget"
    slider.evaluate(
        """el => { el.value = el.value === el.min ? el.max : el.min;
                   el.dispatchEvent(new Event('input', {bubbles: true}));
                   el.dispatchEvent(new Event('change', {bubbles: true})); }"""
    )


def test_changing_the_layer_widget_redraws_the_chart(site: Path, offline_page):
    page = open_page(offline_page, sentence_page(site, 0))
    chart = heatmap(page)
    before = chart.eval_on_selector("svg.marks", "s => s.innerHTML")
    change_widget(page, chart)
    page.wait_for_function(
        "([el, old]) => el.querySelector('svg.marks').innerHTML !== old && !el.dataset.loading",
        arg=[chart, before],
    )
    assert chart_has_marks(page, chart)
    assert offline_page.errors == [] and offline_page.blocked == []


def test_hostile_sentence_runs_nothing_and_reads_literally(hostile_site: Path, offline_page):
    page = open_page(offline_page, sentence_page(hostile_site, 1))
    texts = page.locator(".tok").all_text_contents()
    assert texts == [display_token(t) for t in HOSTILE_TOKENS]  # one rule for every token
    assert "</script><img src=x onerror=alert(1)>" in page.locator("blockquote").inner_text()
    assert page.locator("img[src=x]").count() == 0
    tips = []
    for cell in heatmap(page).query_selector_all("g.mark-rect.role-mark path")[:20]:
        hover(page, cell)  # tooltips show token text too, literally
        tips.append(page.locator("#vg-tooltip-element").inner_text())
    assert any("</script><img src=x onerror=alert(1)>" in t for t in tips)
    assert offline_page.dialogs == [] and offline_page.errors == []
    index = open_page(offline_page, hostile_site / "index.html")
    assert "</title>x" in index.locator(".card").inner_text()
    assert offline_page.dialogs == [] and offline_page.errors == []


def test_phone_width_has_no_horizontal_page_scroll(site: Path, offline_page):
    page = offline_page.page
    page.set_viewport_size({"width": 360, "height": 740})
    for path in (site / "index.html", sentence_page(site, 1)):
        open_page(offline_page, path)
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, (path.name, overflow)


def test_print_hides_widgets_and_keeps_figures(site: Path, offline_page):
    page = open_page(offline_page, sentence_page(site, 0))
    page.emulate_media(media="print")
    assert page.locator(".toc").is_hidden()
    assert page.locator(".vega-bindings").first.is_hidden()
    assert page.locator("figure.ar-figure").first.is_visible()


def test_every_key_finding_links_to_a_drawn_figure(tmp_path_factory, offline_page):
    folder = build(fake_study(3, n_layers=3, n_heads=2), tmp_path_factory.mktemp("f") / "site")
    page = open_page(offline_page, folder / "index.html")
    hrefs = page.eval_on_selector_all(
        "#findings p > a", "els => els.map(a => a.getAttribute('href'))"
    )
    assert len(hrefs) >= 4
    for href in hrefs:
        name, _, anchor = href.partition("#")
        target = open_page(offline_page, folder / (name or "index.html"))
        element = target.query_selector(f"[id='{anchor}']")
        assert element is not None, href
        chart = (
            element
            if "ar-chart" in (element.get_attribute("class") or "")
            else element.query_selector(".ar-chart")
        )
        assert chart.get_attribute("data-rendered") == "true" and chart_has_marks(target, chart), (
            href
        )
    assert offline_page.errors == []


FIRST_DRAW = """(() => {
  window.__firstDraw = null;
  new MutationObserver(() => {
    if (window.__firstDraw === null && document.querySelector('.ar-chart[data-rendered]'))
      window.__firstDraw = performance.timeOrigin + performance.now();
  }).observe(document, {subtree: true, attributes: true, attributeFilter: ['data-rendered']});
})();"""


def weight_before_first_draw(browser, site: Path, page_name: str, scheme: str) -> int:
    """Bytes of the page and of every file it requested before its first chart drew (the
    shared Vega bundle aside: every page loads it once), opened from disk or over http."""
    import functools
    import threading
    import time
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
    from urllib.parse import unquote, urlparse

    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(site))
    handler.log_message = lambda *args: None
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    context = browser.new_context()
    requests: list[tuple[float, str]] = []

    def route(route):
        url = route.request.url
        requests.append((time.time() * 1000, url))
        if url.startswith(("file://", base)):
            route.continue_()
        else:
            route.abort()

    try:
        context.route("**/*", route)
        page = context.new_page()
        page.add_init_script(FIRST_DRAW)
        page.goto(base + page_name if scheme == "http" else (site / page_name).as_uri())
        page.wait_for_function("window.__firstDraw !== null")
        first = page.evaluate("window.__firstDraw")
    finally:
        context.close()
        server.shutdown()
    early = {url for at, url in requests if at <= first and "assets/vega" not in url}
    paths = [site / unquote(urlparse(url).path).split(str(site))[-1].lstrip("/")
             if scheme == "file" else site / unquote(urlparse(url).path).lstrip("/")
             for url in early]  # fmt: skip
    assert site / page_name in paths
    return sum(p.stat().st_size for p in paths if p.is_file())


@pytest.fixture(scope="module")
def sixty_token_site(tmp_path_factory) -> Path:
    """A 60-token sentence in the default model's shape (30 layers, 9 heads), with the
    intervention grids on its page: the page issue 10 sets a weight for."""
    study = fake_study(1, n_layers=30, n_heads=9, n_tokens=60)
    return build(study, tmp_path_factory.mktemp("sixty") / "site", replace(OPTIONS, images=False))


@pytest.mark.parametrize("scheme", ["file", "http"])
def test_a_60_token_page_loads_under_300_kb_before_its_first_chart(
    browser, sixty_token_site, scheme
):
    """Each chart draws once, with the rows its opening view selects (their data file is
    read before it draws), so those files count; issue 42 bounds a first draw at 1 MB."""
    page_name = sentence_page(sixty_token_site, 0).name
    weight = weight_before_first_draw(browser, sixty_token_site, page_name, scheme)
    assert 0 < weight < 350_000, weight


@pytest.mark.parametrize("scheme", ["file", "http"])
def test_longest_example_page_loads_under_350_kb_before_its_first_chart(browser, scheme):
    """The example's heaviest page (the real model's numbers; the intervention grids on a
    70-token passage): the 60-token page's bound (above), well within issue 42's 1 MB."""
    page_name = str(
        max(EXAMPLE.rglob("s*.html"), key=lambda p: p.stat().st_size).relative_to(EXAMPLE)
    )
    weight = weight_before_first_draw(browser, EXAMPLE, page_name, scheme)
    assert 0 < weight < 350_000, weight


def test_long_input_impact_by_position_steps_through_its_windows(tmp_path, offline_page):
    """A 140-token sentence draws positions 0-127 first; the slider's next step loads the
    data file of positions 128-139 and draws those."""
    study = fake_study(1, n_layers=2, n_heads=2, n_tokens=140)
    site = build(study, tmp_path / "site", replace(OPTIONS, images=False))
    page = open_page(offline_page, sentence_page(site, 0))
    chart = page.query_selector('.ar-chart[data-key="impact-by-position"]')

    def title() -> str:
        return chart.eval_on_selector(
            "svg.marks", "s => s.querySelector('.role-title-text').textContent"
        )

    def first_label() -> str:
        return chart.eval_on_selector(
            "svg.marks", "s => s.querySelector('.role-axis-label text').textContent"
        )

    assert title() == "Impact by position (positions 0-127 of 140)"
    assert first_label().startswith("0 ")
    slider = chart.query_selector(".vega-bindings input[type=range]")
    assert slider.evaluate("el => [el.min, el.max, el.step]") == ["0", "128", "128"]
    change_widget(page, chart)
    page.wait_for_function(
        "el => el.querySelector('.role-title-text').textContent.includes('128-139')",
        arg=chart,
    )
    page.wait_for_function("el => !el.dataset.loading", arg=chart)
    assert title() == "Impact by position (positions 128-139 of 140)"
    assert first_label().startswith("128 ")
    assert chart_has_marks(page, chart)
    assert offline_page.errors == [] and offline_page.blocked == []


def test_long_input_breakdown_slides_its_window_over_the_layer_it_has(tmp_path, offline_page):
    """Figure 2 of a 140-token sentence draws positions 0-127 of its layer's rows; its
    slider draws 128-139 from the same rows, with no data file to load."""
    study = fake_study(1, n_layers=2, n_heads=2, n_tokens=140)
    site = build(study, tmp_path / "site", replace(OPTIONS, images=False))
    page = open_page(offline_page, sentence_page(site, 0))
    chart = page.query_selector('.ar-chart[data-key="attention-breakdown"]')

    def shown() -> tuple[str, list[int]]:
        return chart.eval_on_selector(
            "svg.marks",
            """s => [s.querySelector('.role-title-text').textContent,
                     [...s.querySelectorAll('.role-axis-label text')]
                       .map(t => t.textContent).filter(t => /^\\d+ /.test(t))
                       .map(t => parseInt(t))]""",  # the token labels: "128 word"
        )

    title, labels = shown()
    assert title.endswith(", positions 0-127 of 140)"), title
    assert min(labels) == 0 and max(labels) == 127
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    slider = chart.query_selector(".vega-bindings input[name=positions_from]")
    slider.evaluate(
        """el => { el.value = el.max;
                   el.dispatchEvent(new Event('input', {bubbles: true})); }"""
    )
    page.wait_for_function(
        "el => el.querySelector('.role-title-text').textContent.includes('128-139')",
        arg=chart,
    )
    title, labels = shown()
    assert title.endswith(", positions 128-139 of 140)"), title
    assert min(labels) == 128 and max(labels) == 139
    assert chart_has_marks(page, chart)
    # the layer's rows were already here; the window is the page's, so figure 10 follows
    # it and loads its own rows of positions 128-139 (its data file of that window)
    # (only data files count: Chromium asks for the favicon whenever it gets to it)
    fetched = [url.rsplit("/", 1)[1] for url in requests if "/data/" in url]
    assert fetched == ["impact-by-position--p128.js"], requests
    impact = page.query_selector('.ar-chart[data-key="impact-by-position"]')
    page.wait_for_function(
        "el => el.querySelector('.role-title-text').textContent.includes('128-139')",
        arg=impact,
    )
    assert offline_page.errors == [] and offline_page.blocked == []
