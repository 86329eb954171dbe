"""Every figure offers its rows as CSV, made in the browser from the chart's own data."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from attnreport.site import SiteOptions, assemble_site, write_site
from tests.browser import ALL_DRAWN
from tests.fixtures.fake_results import fake_study, typed
from tests.site_helpers import site_charts

pytestmark = pytest.mark.browser
OPTIONS = SiteOptions(title="CSV test", date="2026-11-21", images=False)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    study = fake_study(2, n_layers=3, n_heads=2)
    folder = tmp_path_factory.mktemp("csv") / "site"
    write_site(assemble_site(study, OPTIONS, site_charts()), folder)
    return study, folder


def _download(page, key: str) -> list[dict[str, str]]:
    with page.expect_download() as info:
        page.locator(f'a.csv[data-key="{key}"]').click()
    download = info.value
    assert download.suggested_filename == f"{key}.csv"
    text = Path(download.path()).read_text(encoding="utf-8")
    return list(csv.DictReader(io.StringIO(text)))


def test_head_impact_csv_holds_the_rows_the_figure_draws(built, offline_page):
    study, folder = built
    page = offline_page.page
    page.goto((folder / "index.html").as_uri())
    page.wait_for_function(ALL_DRAWN)
    links = page.locator("a.csv")
    assert links.count() == page.locator(".ar-chart").count() > 0
    assert all(links.nth(i).is_visible() for i in range(links.count()))
    rows = _download(page, "set-head-impact")
    pooled = typed(study).set.impact_pooled.arrays()
    want = {(int(a), int(b)): float(m) for a, b, m in
            zip(pooled["layer"], pooled["head"], pooled["magnitude"], strict=True)}  # fmt: skip
    got = {(int(r["layer"]), int(r["head"])): float(r["magnitude"]) for r in rows}
    assert len(rows) == len(want) == 3 * 2
    assert got.keys() == want.keys()
    for key, value in want.items():
        assert got[key] == pytest.approx(value, rel=1e-3, abs=1e-6)  # the page rounds
    assert offline_page.errors == [] and offline_page.blocked == []


def test_a_sentence_figure_csv_parses(built, offline_page):
    study, folder = built
    page = offline_page.page
    page.goto(next(folder.rglob("s000-*.html")).as_uri())
    page.wait_for_function(ALL_DRAWN)
    rows = _download(page, "impact-by-position")
    block = typed(study).sentences[0].tables.block_impact.arrays()
    assert len(rows) == len(block["layer"])  # one line per (layer, token), every layer inline
    assert {"layer", "query", "magnitude"} <= set(rows[0])


def test_without_javascript_the_csv_link_is_hidden(built):
    _, folder = built
    html = (folder / "index.html").read_text(encoding="utf-8")
    assert '<span class="csv-link" hidden>' in html
