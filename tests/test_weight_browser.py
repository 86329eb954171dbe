"""Issue 28: a long input's breakdown figures inline one head and load the others' data
files on demand (one file per (layer, head)), in Chromium from file://."""

from __future__ import annotations

import csv
import io
from dataclasses import replace

import pytest

from tests.fixtures.fake_results import fake_study
from tests.test_browser import OPTIONS, build, chart_has_marks, open_page, sentence_page

pytestmark = pytest.mark.browser

N_TOKENS, N_HEADS = 140, 3  # past POSITION_WINDOW (128): windowed, chunked per head


def _rows_of(page, key: str) -> list[dict[str, str]]:
    """The rows of figure ``key``'s data set, as the page's CSV link would give them."""
    text = page.evaluate("key => window.attnreport.csv(key)", key)
    return list(csv.DictReader(io.StringIO(text)))


def test_long_breakdown_loads_one_heads_file_when_the_head_changes(tmp_path, offline_page):
    study = fake_study(1, n_layers=2, n_heads=N_HEADS, n_tokens=N_TOKENS)
    site = build(study, tmp_path / "site", replace(OPTIONS, images=False))
    columns = study["sentences"][0]["tables"]["breakdown"]["columns"]
    page = open_page(offline_page, sentence_page(site, 0))
    chart = page.query_selector('.ar-chart[data-key="attention-breakdown"]')
    first = {(r["layer"], r["head"]) for r in _rows_of(page, "attention-breakdown")}
    assert len(first) == 1, "the page inlines one head's rows"
    (layer, head), = first  # fmt: skip
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url.rsplit("/", 1)[1]))
    other = str((int(head) + 1) % N_HEADS)
    control = chart.query_selector(".vega-bindings [name=head]")
    control.evaluate(
        """(el, value) => { el.value = value;
                   el.dispatchEvent(new Event('input', {bubbles: true}));
                   el.dispatchEvent(new Event('change', {bubbles: true})); }""",
        other,
    )
    page.wait_for_function(
        """([key, head]) => window.attnreport.csv(key).split('\\n').length > 1 &&
             [...document.querySelectorAll('.ar-chart')].every(el => !el.dataset.loading) &&
             window.attnreport.state.values.head === head""",
        arg=["attention-breakdown", int(other)],
    )
    page.wait_for_function(
        "() => [...document.querySelectorAll('.ar-chart')].every(el => !el.dataset.loading)",
    )
    loaded = [name for name in requests if name.startswith("attention-breakdown--")]
    assert len(loaded) == 1, requests  # figures 2 and 3 share it, each file loads once
    rows = _rows_of(page, "attention-breakdown")
    expected = sum(
        1
        for la, h in zip(columns["layer"], columns["head"], strict=True)
        if (str(la), str(h)) == (layer, other)
    )
    assert sum(1 for r in rows if (r["layer"], r["head"]) == (layer, other)) == expected
    for key in ("attention-breakdown", "bias-vs-position"):
        drawn = page.query_selector(f'.ar-chart[data-key="{key}"]')
        assert drawn.get_attribute("data-rendered") == "true"
        assert chart_has_marks(page, drawn)
    assert offline_page.errors == [] and offline_page.blocked == []
