"""A plotted quantity that is identically zero for the model is said, not drawn (issue 27).

Figure 3 (bias vs position) of a model without Q/K bias (tiny Llama) would draw the bias
term as a flat line at 0: the page says so in one sentence instead, once where a reader
looks (the caption, not also above the chart) and in its alt text, and draws only the
position term. A model with a Q/K bias
(tiny Qwen2, biases perturbed away from their zero init) draws both lines, with no note.
The pages are built end to end and loaded in Chromium.
"""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

import pytest
from click.testing import CliRunner

from attnreport.cli import main
from tests.browser import ALL_DRAWN, DRAW_MS
from tests.tiny_models import save_tiny_model

NOTE = "this model's query and key projections have no bias"


class Figures(HTMLParser):
    """Each figure of a page: its chart's key and aria-label, its caption and its
    payload's text."""

    def __init__(self) -> None:
        super().__init__()
        self.figures: list[dict[str, str]] = []
        self.where: str | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "figure":
            self.figures.append(dict.fromkeys(("key", "label", "caption", "payload"), ""))
        elif self.figures and "ar-chart" in (a.get("class") or "").split():
            self.figures[-1].update(key=a.get("data-key", ""), label=a.get("aria-label", ""))
        if tag == "figcaption":
            self.where = "caption"
        if tag == "script" and (a.get("id") or "").startswith("ar-data-"):
            self.where = "payload"

    def handle_endtag(self, tag):
        if tag in ("figcaption", "script"):
            self.where = None

    def handle_data(self, data):
        if self.where and self.figures:
            self.figures[-1][self.where] += data


def figure_of(html: str, key: str) -> dict[str, str]:
    parser = Figures()
    parser.feed(html)
    return next(f for f in parser.figures if f["key"] == key)


def build_site(tmp_path: Path, family: str) -> Path:
    model = save_tiny_model(family, tmp_path / family)
    sentences = tmp_path / "s.txt"
    sentences.write_text("the cat chased the mouse and the dog sat on the mat\n")
    out = tmp_path / "site"
    args = ["build", "--model", str(model), "--sentences", str(sentences), "--out", str(out)]
    result = CliRunner().invoke(main, [*args, "--no-images"])
    assert result.exit_code == 0, result.output
    return next(out.glob("s000*.html"))


def folded_terms(payload: str) -> list[list[str]]:
    """The terms figure 3 folds into lines, from its compiled (Vega) spec."""
    spec = json.loads(payload)["spec"]
    return [
        t["fields"] for d in spec["data"] for t in d.get("transform", []) if t.get("type") == "fold"
    ]


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.parametrize("family, bias", [("llama", False), ("qwen2", True)])
def test_bias_term_is_said_for_a_model_without_qk_bias_and_drawn_with_one(
    tmp_path, offline_page, family, bias
):
    page_path = build_site(tmp_path, family)
    html = page_path.read_text(encoding="utf-8")
    fig = figure_of(html, "bias-vs-position")
    if bias:
        assert NOTE not in fig["label"] and NOTE not in fig["caption"]
        assert folded_terms(fig["payload"]) == [["bias", "position"]]
    else:
        assert fig["label"].count(NOTE) == 1 and fig["caption"].count(NOTE) == 1
        assert fig["label"].startswith("Figure S0.3: Position term.")
        assert folded_terms(fig["payload"]) == [["position"]]

    page = offline_page.page
    page.goto(page_path.as_uri())
    page.wait_for_function(ALL_DRAWN, timeout=DRAW_MS)
    # what a reader sees: the sentence once, in the caption under the chart's own title
    assert page.locator("#figure-3").inner_text().count(NOTE) == (0 if bias else 1)
    caption = page.locator("#figure-3 figcaption")
    assert caption.is_visible() and (NOTE in caption.inner_text()) != bias
    chart = page.locator("#ar-chart-bias-vs-position")
    title = " ".join(chart.locator(".role-title-text").all_text_contents())
    assert title.startswith("Bias vs position" if bias else "Position term"), title
    assert chart.get_attribute("data-rendered") == "true"
    legend = chart.locator(".role-legend-label text").all_text_contents()
    assert ("bias (target only)" in legend) == bias and "position" in legend
    assert offline_page.errors == []


def test_the_zero_bias_note_gives_the_reason_the_model_has():
    """Without QK-norm a zero bias term means projections without bias; with it, q and k
    are read after the norm, where a bias (which a model may well have) cannot be split off,
    so the note must not say the model has none."""
    import numpy as np

    from attnreport.charts.figures.breakdown import zero_bias_note

    zero, some = {"bias": np.zeros(6)}, {"bias": np.array([0.0, 0.1])}
    assert NOTE in zero_bias_note(zero)
    normed = zero_bias_note(zero, qk_norm=True)
    assert NOTE not in normed and "QK-norm" in normed and "content term" in normed
    assert zero_bias_note(some) == zero_bias_note(some, qk_norm=True) == ""
    assert zero_bias_note({"bias": np.zeros(0)}) == ""
