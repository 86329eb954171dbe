"""A site drawn while its intervention grids are being computed (``SiteOptions.updating``,
what ``serve --watch`` draws before a save's grids have run): each grid figure is a note
in its place on the grids' page, numbered as the figure will be, with no chart, data or
image; the index says what waits for the grids instead of "no interventions were run";
and nothing of the moment is stored in ``render.json``. Fake results, stand-in charts.
"""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from attnreport.charts.registry import UPDATING, FigureEntry, Placed, with_notes
from attnreport.site.apparatus import GRIDS_UPDATING
from attnreport.site.assemble import assemble_site
from attnreport.site.context import GRIDS, SiteOptions
from tests.fixtures.fake_results import fake_study, typed
from tests.site_helpers import demo_charts

OPTIONS = SiteOptions(images=False, date="2026-01-01")


def _without_grids(positional: str = "rope"):
    return replace(typed(fake_study(positional=positional)), interventions=None)


def _page(site, index: int) -> str:
    name = next(n for n in site if re.fullmatch(rf"s{index:03d}-.*\.html", n))
    return site[name].decode()


@pytest.mark.parametrize(("positional", "notes"), [("rope", 3), ("absolute", 2)])
def test_each_grid_is_a_note_on_the_grids_page(positional, notes):
    results = _without_grids(positional)
    site = assemble_site(results, replace(OPTIONS, updating=(GRIDS,)), demo_charts())
    page = _page(site, results.manifest.settings.scaling_sentence)
    keys = re.findall(r'data-updating="([a-z-]+)"', page)
    expected = ["scaling-grid", "mean-grid", "mean-grid-before-rotation"][:notes]
    assert keys == expected  # in registry order; before the rotation: rotary models only
    assert page.count(UPDATING) == notes
    numbers = re.findall(r'<span class="fignum">Figure (S\d+\.\d+)\.</span>', page)
    assert len(numbers) == len(set(numbers))  # numbered among the page's figures, once each
    assert not re.search(r'id="ar-chart-(scaling|mean)-grid', page)
    assert not any("scaling-grid" in name or "mean-grid" in name for name in site)
    other = _page(site, 1)
    assert "data-updating=" not in other  # only the grids' page holds them

    index = site["index.html"].decode()
    assert GRIDS_UPDATING in index and "The interventions are being run." in index
    assert "No interventions were run." not in index


def test_the_moment_is_not_stored_and_a_site_without_grids_has_no_notes():
    results = _without_grids()
    updating = assemble_site(results, replace(OPTIONS, updating=(GRIDS,)), demo_charts())
    plain = assemble_site(results, OPTIONS, demo_charts())
    assert updating["results/render.json"] == plain["results/render.json"]
    assert not any(
        b"data-updating=" in data for name, data in plain.items() if name.endswith(".html")
    )
    assert b"No interventions were run." in plain["index.html"]


def test_a_note_takes_the_place_of_its_figure_in_registry_order():
    def placed(key: str, updating: bool = False) -> Placed:
        entry = FigureEntry(
            key, "sentence", "interventions", ("interventions:mean",), lambda i: None
        )
        return Placed(entry, None, updating=updating)  # type: ignore[arg-type]

    made = [placed("attention-map"), placed("mean-grid"), placed("self-focus")]
    notes = [placed("scaling-grid", True), placed("mean-grid", True)]
    merged = with_notes(made, notes)
    assert [(p.entry.key, p.updating) for p in merged] == [
        ("attention-map", False), ("self-focus", False), ("scaling-grid", True), ("mean-grid", True),
    ]  # fmt: skip
    assert with_notes(made, []) == made
