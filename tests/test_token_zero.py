"""Token 0 can attend only to itself: the per-position figures never count it as a token
that attends most to itself ("self") or to the first token ("first").

Each figure is drawn by Vega (vl-convert, as a browser would) with its default view's
rows, and every mark's accessible label (which names its top target) is read back.
"""

from __future__ import annotations

import re

import pytest
import vl_convert

from attnreport.charts import sentence_figures
from attnreport.charts.export.images import VL_VERSION
from attnreport.charts.export.vega_spec import fitted
from attnreport.charts.spec.assemble import columns_to_rows
from attnreport.charts.spec.theme import KIND_FIRST, KIND_OTHER, KIND_SELF, KIND_ZERO
from tests.fixtures.fake_results import fake_study, typed

LABEL = re.compile(r'aria-label="([^"]*)"[^>]*aria-roledescription="(?:point|circle)"')


@pytest.fixture(scope="module")
def figures():
    study = typed(fake_study(n_tokens=7))
    page = sentence_figures(
        study.sentences[0], study.interventions, study.manifest, study.sentences
    )
    return {fig.key: fig for fig in page}


def drawn_marks(fig) -> list[dict[str, str]]:
    """Every point the figure's default view draws, as its label's ``name: value`` pairs."""
    rows = columns_to_rows(fig.inline)
    spec = {**fitted(fig.spec), "datasets": {fig.key: rows}}
    svg = vl_convert.vegalite_to_svg(spec, vl_version=VL_VERSION)
    return [
        dict(part.split(": ", 1) for part in label.split("; ") if ": " in part)
        for label in LABEL.findall(svg)
    ]


def test_the_attention_maps_row_0_is_neither_self_nor_first(figures):
    dots = [m for m in drawn_marks(figures["attention-map"]) if "top_target" in m]
    assert len(dots) == 7  # one top-target dot per row
    for dot in dots:
        query, key = int(dot["query"]), int(dot["key"])
        expected = (
            KIND_ZERO if query == 0
            else KIND_SELF if key == query
            else KIND_FIRST if key == 0
            else KIND_OTHER
        )  # fmt: skip
        assert dot["top_target"] == expected, dot


def test_the_update_scatter_marks_token_0_apart(figures):
    points = drawn_marks(figures["orientation-vs-magnitude"])
    zero = [p for p in points if p.get("token") == "What"]  # the fake sentence's token 0
    assert zero and all(p["head's top target"] == KIND_ZERO for p in zero)
    others = [p for p in points if p.get("token") != "What"]
    assert others and not any(p["head's top target"] == KIND_ZERO for p in others)


def test_impact_by_position_never_marks_token_0(figures):
    fig = figures["impact-by-position"]
    rows = columns_to_rows(fig.inline)
    assert {r["top_first_heads"] for r in rows if r["query"] == 0} == {0}
    assert any(r["top_first_heads"] > 0 for r in rows if r["query"] > 0)
