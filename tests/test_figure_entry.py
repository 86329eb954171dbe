"""A new figure is one registry entry, its builder and its test: a toy figure declared
here (nowhere else) is built, captioned with its entry's notes, alt-texted from its data
and placed on the index page of a real site, with a data link to the file it reads."""

from __future__ import annotations

from dataclasses import replace
from html.parser import HTMLParser

import altair as alt
import numpy as np
import pytest

from attnreport.charts import registry
from attnreport.charts.figure import Figure
from attnreport.charts.registry import FigureEntry, Inputs
from attnreport.charts.spec.assemble import build_figure
from attnreport.results.types import set_tables
from attnreport.site import SiteOptions, assemble_site, default_charts
from attnreport.site.words.alt_text import AltData
from attnreport.site.words.readings import per_head
from tests.fixtures.fake_results import fake_study, typed

KEY = "toy-first-focus"
NOTE = "The toy figure defines soft-capping here, and only for a model that soft-caps."


def toy_builder(inputs: Inputs) -> Figure:
    """Mean first-token focus per layer, pooled over the set: one bar per layer."""
    pooled = inputs.results.set.focus_pooled.arrays()
    keep = pooled["statistic"] == "first_focus"
    layers = sorted(set(pooled["layer"][keep].tolist()))
    means = [float(pooled["value"][keep & (pooled["layer"] == k)].mean()) for k in layers]
    chart = alt.Chart(alt.Data(name=KEY)).mark_bar().encode(x="layer:O", y="mean:Q")
    caption = "Mean first-token focus per layer." + inputs.notes  # what its entry adds
    rows = {"layer": layers, "mean": means}
    return build_figure(key=KEY, title="Toy focus", caption=caption, chart=chart, rows=rows)


def toy_alt(data: AltData) -> str:
    """Names the layer with the highest mean first-token focus, read from the data."""
    heads = per_head(data.set_tables.get("focus_pooled"), "first_focus")
    if not heads:
        return "Bar chart of first-token focus per layer; there is no data."
    layers = sorted({layer for layer, _ in heads})
    means = {k: np.mean([v for (a, _), v in heads.items() if a == k]) for k in layers}
    top = min(layers, key=lambda k: (-means[k], k))
    return f"Bar chart of first-token focus per layer; layer {top} is highest."


TOY = FigureEntry(
    KEY, "index", "set", ("set:focus_pooled",), toy_builder,
    alt=toy_alt, notes=(("softcap", NOTE),), shaded=True,
)  # fmt: skip


class _Figures(HTMLParser):
    """The <figure> elements of a page: id -> text inside, the chart's aria-label (what a
    screen reader hears), links."""

    def __init__(self) -> None:
        super().__init__()
        self.figures: dict[str, dict] = {}
        self._open: str | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "figure":
            self._open = a.get("id", "")
            self.figures[self._open] = {"text": "", "alt": "", "links": []}
        elif self._open is not None and a.get("role") == "img":
            self.figures[self._open]["alt"] = a.get("aria-label", "")
        elif self._open is not None and tag == "a":
            self.figures[self._open]["links"].append(a.get("href", ""))

    def handle_endtag(self, tag):
        if tag == "figure":
            self._open = None

    def handle_data(self, data):
        if self._open is not None:
            self.figures[self._open]["text"] += data


def _results(features: tuple[str, ...], windows: dict[int, int]):
    results = typed(fake_study(2))
    model = replace(results.manifest.model, features=features, layer_windows=windows)
    return replace(results, manifest=replace(results.manifest, model=model))


@pytest.fixture
def with_toy(monkeypatch):
    monkeypatch.setattr(registry, "FIGURES", (*registry.FIGURES, TOY))


def test_a_toy_figure_from_one_entry_is_drawn_captioned_and_alt_texted(with_toy):
    results = _results(("softcap",), {})
    options = SiteOptions(images=False, date="2026-01-01")
    files = assemble_site(results, options, default_charts(cache=False))
    page = _Figures()
    page.feed(files["index.html"].decode())
    toy = [f for f in page.figures.values() if "Toy focus" in f["text"]]
    assert len(toy) == 1, list(page.figures)
    fig = toy[0]
    assert "Mean first-token focus per layer. " + NOTE in fig["text"]
    expected = toy_alt(AltData(set_tables=set_tables(results.set)))
    assert "layer" in expected and expected in fig["alt"]
    assert any("results/set.json" in link for link in fig["links"]), fig["links"]
    assert f'"{KEY}"' in files["index.html"].decode()  # its payload, named by its key


def test_the_entry_decides_its_caption_notes_not_the_builder():
    plain = registry.place(TOY, Inputs(_results((), {}))).figure
    capped = registry.place(TOY, Inputs(_results(("softcap",), {1: 8}))).figure
    assert plain.caption == "Mean first-token focus per layer."
    assert NOTE in capped.caption and "Sliding windows (shaded): layer 1" in capped.caption
    unshaded = replace(TOY, shaded=False)
    caption = registry.place(unshaded, Inputs(_results((), {1: 8}))).figure.caption
    assert "Sliding windows: layer 1" in caption and "(shaded)" not in caption
