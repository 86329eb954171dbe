"""Playwright fixtures: a headless Chromium that can only read ``file://`` URLs.

``browser`` (session) launches the system Chromium (Debian package ``chromium``) through
Playwright; tests skip with the reason when either is missing. ``offline_page`` opens a
fresh context whose every non-``file://`` request is aborted and records console errors,
page errors, dialogs (``alert``/``confirm``/``prompt``, dismissed) and blocked URLs.
They are registered for every test module by ``tests/conftest.py``.

Every context and page made from ``browser`` waits ``WAIT_MS`` by default (Playwright's
own default, 30 s, is short for a page drawing dozens of charts on a busy machine), so a
test names a timeout only to wait longer. Tests wait for the page's own signals
(``data-rendered`` on every chart, ``settle``), never a fixed time.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.patience import patience_ms

WAIT_MS = patience_ms(30)  # any wait: a draw, a click, a page load
DRAW_MS = patience_ms(60)  # a page of many charts (the example's intervention grids) drawing

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
]


def chromium_path() -> str | None:
    """The system Chromium, or None."""
    found = shutil.which("chromium")
    if found:
        return found
    return "/usr/bin/chromium" if os.access("/usr/bin/chromium", os.X_OK) else None


@dataclass
class OfflinePage:
    """A Playwright page plus everything it reported."""

    page: Any
    errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)


class PatientBrowser:
    """A Playwright browser whose new contexts and pages wait ``WAIT_MS`` by default."""

    def __init__(self, browser: Any) -> None:
        self._browser = browser

    def new_context(self, **options: Any) -> Any:
        context = self._browser.new_context(**options)
        context.set_default_timeout(WAIT_MS)
        return context

    def new_page(self, **options: Any) -> Any:
        page = self._browser.new_page(**options)
        page.set_default_timeout(WAIT_MS)
        return page

    def __getattr__(self, name: str) -> Any:
        return getattr(self._browser, name)


# Whether every chart of the page has drawn, or failed to (``data-rendered``).
ALL_DRAWN = """() => [...document.querySelectorAll('.ar-chart')]
    .every(el => el.dataset.rendered === 'true' || el.dataset.rendered === 'error')"""


def settle(page: Any, timeout: float | None = None) -> None:
    """Wait until the page says it is quiet: ``window.attnreport.settled()`` resolved (every
    chart drawn after every view ran, nothing loading, no fitting pass left)."""
    page.evaluate(
        """() => { window.__arSettled = false;
                   window.attnreport.settled().then(() => { window.__arSettled = true; }); }"""
    )
    page.wait_for_function("() => window.__arSettled === true", timeout=timeout)


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """A headless Chromium shared by the session (``PatientBrowser``)."""
    path = chromium_path()
    if path is None:
        pytest.skip("Chromium not found: install the Debian package 'chromium'")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("Playwright is not installed: pip install playwright")
    playwright = sync_playwright().start()
    try:
        chromium = playwright.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)
    except Exception as err:  # a broken or incompatible Chromium
        playwright.stop()
        pytest.skip(f"Chromium at {path} could not be started by Playwright: {err}")
    yield PatientBrowser(chromium)
    chromium.close()
    playwright.stop()


def _block_network(blocked: list[str]):
    def route(route: Any) -> None:
        url = route.request.url
        if url.startswith("file://"):
            route.continue_()
        else:
            blocked.append(url)
            route.abort()

    return route


@pytest.fixture
def offline_page(browser: Any) -> Iterator[OfflinePage]:
    """A page in a fresh context that can reach nothing but ``file://``."""
    context = browser.new_context(viewport={"width": 1000, "height": 800})
    result = OfflinePage(page=None)
    context.route("**/*", _block_network(result.blocked))
    page = context.new_page()
    page.on("console", lambda m: m.type == "error" and result.errors.append(m.text))
    page.on("pageerror", lambda e: result.errors.append(f"pageerror: {e}"))

    def on_dialog(dialog: Any) -> None:
        result.dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    page.on("dialog", on_dialog)
    result.page = page
    yield result
    context.close()
