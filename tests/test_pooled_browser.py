"""Issue 28: past ``map_tokens`` a long input's breakdown is stored as 32-position bins,
and the page draws those very rows: in Chromium from file://, the figure's rows past
position 255 are the bins of the results (to the page's 3 decimals), drawn in the last
window of positions."""

from __future__ import annotations

import csv
import io
from dataclasses import replace

import numpy as np
import pytest

from attnreport.results import as_results
from attnreport.results.pooling import POOL_WIDTH, pool_sentence_tables
from tests.fixtures.fake_results import fake_study
from tests.test_browser import OPTIONS, build, chart_has_marks, open_page, sentence_page

pytestmark = pytest.mark.browser

N_TOKENS, MAP_TOKENS = 300, 256  # 256 exact positions, then bins at 256 and 288 (12 queries)
SCORE_TOL = 5e-4 + 1e-9  # the page's 3 decimals (``SCORE_DECIMALS``)


def long_results():
    """One fake sentence of 300 tokens as a long input is stored: no maps, tables pooled."""
    results = as_results(fake_study(1, n_layers=2, n_heads=3, n_tokens=N_TOKENS))
    sentence = results.sentences[0]
    pooled = replace(
        sentence, attention=None, tables=pool_sentence_tables(sentence.tables, MAP_TOKENS)
    )
    return replace(results, sentences=(pooled,))


def test_the_page_draws_the_stored_bins(tmp_path, offline_page):
    results = long_results()
    stored = results.sentences[0].tables.breakdown
    assert sorted(set(stored.span.tolist())) == [1, N_TOKENS - MAP_TOKENS - POOL_WIDTH, 32]
    site = build(results, tmp_path / "site", replace(OPTIONS, images=False))
    page = open_page(offline_page, sentence_page(site, 0))
    text = page.evaluate("key => window.attnreport.csv(key)", "attention-breakdown")
    rows = list(csv.DictReader(io.StringIO(text)))
    layer, head = int(rows[0]["layer"]), int(rows[0]["head"])
    shown = {(int(r["query"]), int(r["rank"])): float(r["score"]) for r in rows}
    mine = (stored.layer == layer) & (stored.head == head)
    expected = {
        (int(q), int(k)): float(s)
        for q, k, s in zip(stored.query[mine], stored.rank[mine], stored.score[mine], strict=True)
    }
    assert shown.keys() == expected.keys()  # positions 0-255, then 256 and 288 only
    assert {q for q, _ in shown if q >= MAP_TOKENS} == {MAP_TOKENS, MAP_TOKENS + POOL_WIDTH}
    gaps = np.array([abs(shown[k] - v) for k, v in expected.items()])
    assert gaps.max() <= SCORE_TOL
    caption = page.inner_text('figure:has(.ar-chart[data-key="attention-breakdown"])')
    assert f"mean of each {POOL_WIDTH} positions" in caption
    slider = page.query_selector('.ar-chart[data-key="attention-breakdown"] [name=positions_from]')
    slider.evaluate(
        """el => { el.value = el.max;
                   el.dispatchEvent(new Event('input', {bubbles: true}));
                   el.dispatchEvent(new Event('change', {bubbles: true})); }"""
    )
    page.wait_for_function("() => window.attnreport.state.values.positions_from === 256")
    chart = page.query_selector('.ar-chart[data-key="attention-breakdown"]')
    assert chart_has_marks(page, chart)
    assert offline_page.errors == [] and offline_page.blocked == []
