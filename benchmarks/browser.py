"""Page weight and render time in headless Chromium (Playwright, ``file://``, network blocked).

The chart runtime (``charts/runtime.js``) sets ``data-rendered`` on each ``.ar-chart``
after its first render ("true", or "error" when it failed). An init script watches that
attribute and notes ``performance.now()`` when the first and the last chart drew; the
time origin is the navigation start. Requests are logged with wall-clock times by the
route that blocks the network, so "loaded before first draw" is every file requested
before the first chart drew.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
]
SHARED_BUNDLE = "assets/vega"  # the shared Vega bundle, left out of "before first draw"

WATCH_CHARTS = """
(() => {
  const marks = {first: null, all: null, origin: performance.timeOrigin};
  window.__arBench = marks;
  const check = () => {
    const charts = document.querySelectorAll('.ar-chart').length;
    const drawn = document.querySelectorAll('.ar-chart[data-rendered]').length;
    if (drawn && marks.first === null) marks.first = performance.now();
    if (charts && drawn === charts && marks.all === null) marks.all = performance.now();
  };
  new MutationObserver(check).observe(document, {
    subtree: true, attributes: true, attributeFilter: ['data-rendered'],
  });
})();
"""


@contextmanager
def chromium() -> Iterator[Any]:
    """The system Chromium driven by Playwright; closed on exit."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@dataclass
class OfflineLoad:
    """One page load: requests (wall time, URL), blocked URLs and errors it reported."""

    requests: list[tuple[float, str]] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


@contextmanager
def offline_page(browser: Any, init_script: str | None = None) -> Iterator[tuple[Any, OfflineLoad]]:
    """A page in a fresh context that can reach only ``file://``, logging what it asks for."""
    context = browser.new_context(viewport={"width": 1000, "height": 800})
    log = OfflineLoad()

    def route(route: Any) -> None:
        url = route.request.url
        log.requests.append((time.time() * 1000, url))
        if url.startswith("file://"):
            route.continue_()
        else:
            log.blocked.append(url)
            route.abort()

    context.route("**/*", route)
    page = context.new_page()
    page.on("pageerror", lambda error: log.errors.append(str(error)))
    page.on("console", lambda m: m.type == "error" and log.errors.append(m.text))
    if init_script:
        page.add_init_script(init_script)
    try:
        yield page, log
    finally:
        context.close()


def file_size(url: str) -> int:
    """Bytes of the local file behind a ``file://`` URL (0 when it is not one or is missing)."""
    parsed = urlparse(url)
    path = Path(unquote(parsed.path))
    return path.stat().st_size if parsed.scheme == "file" and path.is_file() else 0


@dataclass(frozen=True)
class PageLoad:
    """One sentence page in Chromium: when its charts drew and what it loaded before."""

    charts: int
    failed_charts: int  # charts whose runtime set data-rendered="error"
    text_painted_ms: float  # first contentful paint (the article's text), from navigation start
    first_draw_ms: float  # from navigation start
    all_drawn_ms: float
    start_bytes: int  # the HTML + files requested before the first draw, bundle excluded
    start_files: list[str]
    bundle_bytes: int  # the shared Vega bundle, loaded by every page
    errors: list[str]
    blocked: list[str]  # non-file:// requests the page tried


ALL_DRAWN = (
    "document.readyState === 'complete' && "
    "(document.querySelectorAll('.ar-chart').length === 0 || window.__arBench.all !== null)"
)
COUNTS = """() => ({
  charts: document.querySelectorAll('.ar-chart').length,
  failed: document.querySelectorAll('.ar-chart[data-rendered="error"]').length,
  painted: (performance.getEntriesByName('first-contentful-paint')[0] || {startTime: 0}).startTime,
})"""


def load_page(browser: Any, path: Path, timeout_s: float = 120) -> PageLoad:
    """Open ``path`` offline and wait until every chart has drawn (or failed)."""
    with offline_page(browser, WATCH_CHARTS) as (page, log):
        page.goto(path.as_uri(), wait_until="load", timeout=timeout_s * 1000)
        page.wait_for_function(ALL_DRAWN, timeout=timeout_s * 1000)
        marks, counts = page.evaluate("window.__arBench"), page.evaluate(COUNTS)
    first = marks["first"] if marks["first"] is not None else 0.0
    all_drawn = marks["all"] if marks["all"] is not None else 0.0
    cutoff = marks["origin"] + first
    early = sorted({url for at, url in log.requests if at <= cutoff or not counts["charts"]})
    bundle = [url for url in early if SHARED_BUNDLE in url]
    counted = [url for url in early if url not in bundle]
    return PageLoad(
        charts=counts["charts"],
        failed_charts=counts["failed"],
        text_painted_ms=counts["painted"],
        first_draw_ms=first,
        all_drawn_ms=all_drawn,
        start_bytes=sum(file_size(url) for url in counted),
        start_files=[Path(urlparse(url).path).name for url in counted],
        bundle_bytes=sum(file_size(url) for url in bundle),
        errors=log.errors,
        blocked=sorted(set(log.blocked)),
    )


def median_load(browser: Any, path: Path, repeats: int) -> PageLoad:
    """The load with the median all-drawn time of ``repeats`` fresh loads."""
    loads = sorted((load_page(browser, path) for _ in range(repeats)), key=lambda p: p.all_drawn_ms)
    return loads[len(loads) // 2]


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else 0


def page_bytes(site: Path, page: str) -> int:
    """Everything one page can ever load but the shared assets: HTML, chunk files, images."""
    stem = page.removesuffix(".html")
    html = (site / page).stat().st_size
    return html + folder_bytes(site / "data" / stem) + folder_bytes(site / "figures" / stem)


@dataclass(frozen=True)
class ForeignRender:
    """A page not made by attnreport (bertviz) opened offline: did it draw anything?"""

    seconds: float  # load event plus the settle time
    svg_elements: int
    blocked: list[str]
    errors: list[str]

    @property
    def rendered(self) -> bool:
        return self.svg_elements > 0


def foreign_render(browser: Any, path: Path, settle_s: float = 3.0) -> ForeignRender:
    """Open ``path`` offline, give its scripts ``settle_s`` seconds, count drawn SVG elements."""
    with offline_page(browser) as (page, log):
        start = time.perf_counter()
        page.goto(path.as_uri(), wait_until="load", timeout=120_000)
        page.wait_for_timeout(settle_s * 1000)
        drawn = page.evaluate("document.querySelectorAll('svg *').length")
        seconds = time.perf_counter() - start
    return ForeignRender(seconds, drawn, sorted(set(log.blocked)), log.errors)


def median_ms(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0
