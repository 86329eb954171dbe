"""Where a report's pages sit in a larger site is template state (``SiteOptions``'
``asset_prefix`` and ``up``, carried by ``PageMeta``): a model's report one folder down in
a comparison links the shared assets one level up and the comparison index in its header,
drawn by the templates, with no rewrite of rendered bytes; ``render.json`` never stores
it, and a report drawn at the top is as it always was."""

from __future__ import annotations

import json
from dataclasses import replace
from html.parser import HTMLParser

import pytest

from attnreport.errors import AttnReportError
from attnreport.publish import options_from_json
from attnreport.site.assemble import assemble_site, options_json
from attnreport.site.context import UNSTORED, SiteOptions
from tests.fixtures.fake_results import fake_study
from tests.site_helpers import demo_charts

OPTIONS = SiteOptions(title="Placed", date="2026-01-02", authors=("Ada",), images=False)
DOWN = replace(OPTIONS, asset_prefix="../", up=("../index.html", "All models"))


class _Header(HTMLParser):
    """The asset links of a page (``<link>`` and ``<script>``) and its header's links as
    (class, href, text)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.assets: list[str] = []
        self.header: list[list[str]] = []
        self._in_header = False
        self._link: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "link" and a.get("href"):
            self.assets.append(a["href"])
        if tag == "script" and a.get("src"):
            self.assets.append(a["src"])
        if tag == "header":
            self._in_header = True
        if tag == "a" and self._in_header:
            self._link = [a.get("class", ""), a.get("href", ""), ""]

    def handle_data(self, data):
        if self._link is not None:
            self._link[2] += data

    def handle_endtag(self, tag):
        if tag == "a" and self._link is not None:
            self.header.append(self._link)
            self._link = None
        if tag == "header":
            self._in_header = False


def header(html: bytes) -> _Header:
    parser = _Header()
    parser.feed(html.decode("utf-8"))
    return parser


@pytest.fixture(scope="module")
def sites() -> dict[str, dict[str, bytes]]:
    study = fake_study(2, n_layers=2, n_heads=2)
    return {
        name: dict(assemble_site(study, options, demo_charts()))
        for name, options in (("top", OPTIONS), ("down", DOWN))
    }


def test_a_report_one_folder_down_links_the_assets_above_and_the_index(sites):
    pages = [n for n in sites["down"] if n.endswith(".html") and n != "404.html"]
    assert len(pages) == 3  # the index and two sentence pages
    for name in pages:
        down, top = header(sites["down"][name]), header(sites["top"][name])
        assert down.assets and all(a.startswith("../assets/") for a in down.assets), name
        assert [a.removeprefix("../") for a in down.assets] == top.assets, name
        assert down.header == [["up", "../index.html", "All models"], ["home", "index.html", "Placed"]]  # fmt: skip
        assert top.header == [["home", "index.html", "Placed"]], name
        assert all(a.startswith("assets/") for a in top.assets), name


def test_placement_changes_only_the_asset_links_and_the_header(sites):
    """Everything else of a page, and every other file, is the same wherever it sits."""
    assert sites["down"].keys() == sites["top"].keys()
    for name, data in sites["top"].items():
        moved = sites["down"][name]
        if not name.endswith(".html") or name == "404.html":
            assert moved == data, name
            continue
        assert moved != data, name
        html = moved.decode().replace('"../assets/', '"assets/')
        html = html.replace('<a class="up" href="../index.html">All models</a> \u203a ', "")
        assert html == data.decode(), name


def test_render_json_never_stores_where_the_pages_sit(sites):
    assert {"asset_prefix", "up", "updating"} == UNSTORED
    stored = json.loads(sites["down"]["results/render.json"])
    assert not UNSTORED & stored.keys()
    assert sites["down"]["results/render.json"] == sites["top"]["results/render.json"]
    assert options_json(DOWN) == options_json(OPTIONS)
    with_up = json.dumps({**stored, "up": ["../index.html", "All models"]}).encode()
    with pytest.raises(AttnReportError, match="unknown site options"):
        options_from_json(with_up, "render.json")
