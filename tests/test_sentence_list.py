"""The index's sentence list: in full for a short set, folded for a long one, with the
sentences that have a page still listed where the reader sees them."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

from attnreport.site.context import FOLD_SENTENCES, IndexContext, Link, PageMeta
from attnreport.site.render import render_index


class Lists(HTMLParser):
    """Each ``<ol>`` of the page: its class, whether it sits in a ``<details>``, and its
    items as (value or None, text, href or None)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.lists: list[dict] = []
        self.details = 0
        self.current: dict | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "details":
            self.details += 1
        elif tag == "ol":
            self.current = {"class": a.get("class"), "folded": self.details > 0, "items": []}
            self.lists.append(self.current)
        elif tag == "li" and self.current is not None:
            self.current["items"].append([a.get("value"), "", None])
        elif tag == "a" and self.current is not None and self.current["items"]:
            self.current["items"][-1][2] = a.get("href")

    def handle_endtag(self, tag):
        if tag == "details":
            self.details -= 1
        elif tag == "ol":
            self.current = None

    def handle_data(self, data):
        if self.current is not None and self.current["items"]:
            self.current["items"][-1][1] += data.strip()


def index_lists(count: int, paged: set[int]) -> dict[str, dict]:
    links = tuple(
        Link(f"s{i:03d}.html" if i in paged else None, f"sentence {i}") for i in range(count)
    )
    ctx = IndexContext(
        meta=PageMeta("A study", None, (), "tiny", "0"),
        lede=(),
        model_card=(),
        sentences=links,
        sections=(),
    )
    parser = Lists()
    parser.feed(render_index(ctx))
    return {lst["class"]: lst for lst in parser.lists if lst["class"] in ("sentences", "paged")}


@pytest.mark.parametrize("count", [FOLD_SENTENCES, 208])
def test_every_sentence_is_listed_in_order_and_a_long_list_is_folded(count):
    lists = index_lists(count, {0, 2, 5})
    full = lists["sentences"]
    assert [text for _, text, _ in full["items"]] == [f"sentence {i}" for i in range(count)]
    assert [i for i, (_, _, href) in enumerate(full["items"]) if href] == [0, 2, 5]
    assert full["folded"] is (count > FOLD_SENTENCES)
    if count > FOLD_SENTENCES:  # the pages stay in sight, numbered as in the full list
        assert lists["paged"]["folded"] is False
        assert lists["paged"]["items"] == [
            [str(i), f"sentence {i}", f"s{i:03d}.html"] for i in (0, 2, 5)
        ]
    else:
        assert "paged" not in lists


def test_a_long_list_without_pages_has_no_empty_list_above_it():
    lists = index_lists(208, set())
    assert "paged" not in lists and lists["sentences"]["folded"] is True
