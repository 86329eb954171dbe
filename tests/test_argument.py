"""The report as an argument: claims on the index, unique figure labels, no empty section,
every footnote reference landing on its note (a site of fake results, demo charts)."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest

from attnreport.site import SiteOptions, assemble_site
from attnreport.site.words.verdicts import VERDICTS
from tests.fixtures.fake_results import fake_study
from tests.html_scan import scan
from tests.site_helpers import demo_charts


@pytest.fixture(scope="module")
def pages():
    files = assemble_site(fake_study(4), SiteOptions(date="2026-11-21"), demo_charts())
    return {n: d.decode() for n, d in files.items() if n.endswith(".html") and n != "404.html"}


class Sections(HTMLParser):
    """Each <section>: its id and how many paragraphs, list items and figures it holds."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[list] = []
        self.depth: list[int] = []

    def handle_starttag(self, tag, attrs):
        if tag == "section":
            self.found.append([dict(attrs).get("id"), 0])
            self.depth.append(len(self.found) - 1)
        elif tag in ("p", "li", "figure", "dl", "pre", "table") and self.depth:
            self.found[self.depth[-1]][1] += 1

    def handle_endtag(self, tag):
        if tag == "section":
            self.depth.pop()


def test_no_section_is_emitted_empty(pages):
    for name, html in pages.items():
        parser = Sections()
        parser.feed(html)
        assert parser.found, name
        empty = [sid for sid, content in parser.found if content == 0]
        assert not empty, (name, empty)


def test_every_footnote_reference_lands_on_its_note(pages):
    for name, html in pages.items():
        page = scan(html)
        ids = set(page.ids)
        assert page.note_refs, name
        for ref in page.note_refs:
            assert ref.removeprefix("#") in page.notes, (name, ref)
        for back in page.back_links:
            assert back.removeprefix("#") in ids, (name, back)
        assert len(page.note_refs) == len(page.notes) == len(set(page.notes)), name


def test_figure_labels_are_unique_across_the_site(pages):
    labels = [label for html in pages.values() for label in scan(html).figure_labels]
    assert len(labels) == len(set(labels))
    index = scan(pages["index.html"]).figure_labels
    assert index == [str(n) for n in range(1, len(index) + 1)]
    for name, html in pages.items():
        if name != "index.html":
            k = int(re.match(r"s(\d+)", name).group(1))
            got = scan(html).figure_labels
            assert got == [f"S{k}.{n}" for n in range(1, len(got) + 1)], name


def test_the_index_states_claims_with_verdicts_and_the_rule(pages):
    html = pages["index.html"]
    assert '<section id="claims">' in html and "95% sign-test interval" in html
    verdicts = re.findall(r'class="claim" data-verdict="([a-z ]+)"', html)
    assert len(verdicts) >= 3 and set(verdicts) <= set(VERDICTS)
    outcomes = re.findall(r'class="check" data-outcome="([a-z]+)"', html)
    assert outcomes and set(outcomes) <= {"passed", "failed"}
    assert "every score becomes ε q·k" in html


def test_a_sentence_without_interventions_has_no_interventions_part(pages):
    study = fake_study(4)
    iv = study["interventions"]
    measured = {iv["scaling"]["sentence"], *iv["mean"]["sentences"]}
    for name, html in pages.items():
        if name == "index.html":
            continue
        k = int(re.match(r"s(\d+)", name).group(1))
        has = '<section id="interventions">' in html
        assert has == (k in measured), name
        assert ('href="#interventions"' in html) == has, name
    assert set(range(4)) - measured, "the fake study should leave a sentence out"


def test_figures_link_to_their_method_and_the_index_to_its_apparatus(pages):
    index_ids = set(scan(pages["index.html"]).ids)
    seen = 0
    for name, html in pages.items():
        links = re.findall(r'<a class="method" href="([^"]+)"', html)
        seen += len(links)  # the demo charts' own keys have no measure; the real ones do
        for href in links:
            assert href.startswith("#" if name == "index.html" else "index.html#"), href
            assert href.split("#")[1] in index_ids, href
    assert seen >= 3
    for section in ("methods", "limitations", "cite"):
        assert section in index_ids
    assert "@misc{" in pages["index.html"]
