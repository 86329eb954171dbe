"""The Vega a page draws is its figure's Vega-Lite, compiled at build time (``vega_spec``).

Independent check: for every figure of a sentence page and of the index, the compiled
spec with the default view's rows filled in (as the runtime does) draws the same SVG, byte
for byte, as the Vega-Lite spec with those rows, compiled by vl-convert as a browser would.
"""

from __future__ import annotations

import json

import pytest
import vl_convert

from attnreport.charts import index_figures, sentence_figures
from attnreport.charts.export.embed import figure_payload
from attnreport.charts.export.images import VL_VERSION
from attnreport.charts.export.svg import stable_svg_ids
from attnreport.charts.export.vega_spec import fitted, page_vega
from attnreport.charts.spec.assemble import columns_to_rows
from tests.fixtures.fake_results import fake_study, typed


@pytest.fixture(scope="module")
def all_figures():
    study = typed(fake_study(n_tokens=7))
    s0 = study.sentences[0]
    page = sentence_figures(s0, study.interventions, study.manifest, study.sentences)
    return [*page, *index_figures(study.set, study.manifest, study.sentences)]


def _filled(vega: dict, key: str, rows: list[dict]) -> dict:
    """What runtime.js does before the first render: the rows become data set KEY's values."""
    data = [{**d, "values": rows} if d.get("name") == key else d for d in vega["data"]]
    return {**vega, "data": data}


def _svg(text: str) -> bytes:
    """SVG bytes with the ids Vega numbers per process (gradients, clips) renumbered."""
    return stable_svg_ids(text.encode("utf-8"))


def test_compiled_spec_draws_what_vega_lite_draws(all_figures):
    assert len(all_figures) >= 10
    for fig in all_figures:
        rows = columns_to_rows(fig.inline)
        assert rows, fig.key  # every default view has rows to draw
        vega = page_vega(fig.spec, fig.key)
        assert "vega/v6" in vega["$schema"]
        page = fitted(fig.spec)  # what the page draws: a single fixed-width view fills its column
        with_rows = {**page, "datasets": {**page.get("datasets", {}), fig.key: rows}}
        expected = _svg(vl_convert.vegalite_to_svg(with_rows, vl_version=VL_VERSION))
        assert _svg(vl_convert.vega_to_svg(_filled(vega, fig.key, rows))) == expected, fig.key


def test_payload_carries_the_compiled_spec_without_rows(all_figures):
    for fig in all_figures:
        spec = json.loads(figure_payload(fig))["spec"]
        assert spec == page_vega(fig.spec, fig.key)
        (data,) = [d for d in spec["data"] if d["name"] == fig.key]
        assert data.get("values") == []  # the rows travel as encoded columns, not here
        # widgets and selections stay signals of the same name (the runtime listens to them)
        signals = {s["name"] for s in spec.get("signals", [])}
        assert {p["name"] for p in fig.spec.get("params", [])} <= signals


def test_single_fixed_width_views_fill_their_column_and_the_others_keep_their_size(all_figures):
    by_key = {fig.key: fig.spec for fig in all_figures}
    # update-magnitude: 7 tokens a head, a strip (one view), not histograms (a facet)
    for key in ("self-focus", "orientation-vs-magnitude", "set-sink-rate", "update-magnitude"):
        spec = fitted(by_key[key])
        assert spec["width"] == "container", key
        assert spec["autosize"] == {"type": "fit-x", "contains": "padding"}, key
        assert spec["height"] == by_key[key]["height"], key  # the height stays
        vega = page_vega(by_key[key], key)
        (width,) = [s for s in vega["signals"] if s["name"] == "width"]
        assert "containerSize()" in width["init"], key
    for key in ("attention-map", "scaling-grid", "mean-grid"):
        assert fitted(by_key[key]) is by_key[key], key  # step-sized or composed


def test_specs_that_cannot_be_drawn_are_refused_with_the_figure_named():
    with pytest.raises(ValueError, match="figure broken: Vega-Lite does not compile"):
        page_vega({"mark": "no-such-mark", "data": {"name": "broken"}}, "broken")
    inline = {"mark": "point", "data": {"values": [{"x": 1}]}, "encoding": {"x": {"field": "x"}}}
    with pytest.raises(ValueError, match="no data set 'other'"):
        page_vega(inline, "other")
