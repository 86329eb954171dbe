"""compact_svg: fewer bytes, the same picture."""

from __future__ import annotations

import vl_convert

from attnreport.charts import sentence_figures
from attnreport.charts.export import images
from attnreport.charts.export.svg import compact_svg, stable_svg_ids
from tests.fixtures.fake_results import fake_study, typed

FONT = b"system-ui, 'Segoe UI', sans-serif"


def test_exported_figures_are_smaller_and_rasterise_to_the_same_pixels():
    study = typed(fake_study(n_tokens=9))
    s0 = study.sentences[0]
    figures = sentence_figures(s0, study.interventions, study.manifest, study.sentences)
    checked = 0
    for fig in figures[:6]:
        drawn = vl_convert.vegalite_to_svg(fig.static_spec, vl_version=images.VL_VERSION)
        full = stable_svg_ids(drawn.encode("utf-8"))
        svg, _ = images.render_static(fig.static_spec, png=False)
        assert svg == compact_svg(full), fig.key  # what the exporter writes
        assert len(svg) < 0.9 * len(full), fig.key
        assert b' opacity="1"' not in svg and b"pointer-events" not in svg
        assert svg.count(b"font-family=") == 1, fig.key  # said once, on the root
        assert compact_svg(svg) == svg  # idempotent
        same = vl_convert.svg_to_png(svg.decode(), scale=1)
        assert same == vl_convert.svg_to_png(full.decode(), scale=1), fig.key
        checked += 1
    assert checked == 6


def test_only_inert_attributes_go():
    svg = (
        b'<svg width="10"><g opacity="1" pointer-events="none"><path fill-opacity="1" '
        b'opacity="0.5" d="M0,0"/><text opacity="1" font-family="' + FONT + b'">a</text></g></svg>'
    )
    out = compact_svg(svg)
    assert out == (
        b'<svg font-family="' + FONT + b'" width="10"><g><path fill-opacity="1" '
        b'opacity="0.5" d="M0,0"/><text>a</text></g></svg>'
    )


def test_the_most_common_family_is_hoisted_and_others_kept():
    svg = (
        b'<svg><text font-family="A">1</text><text font-family="B">2</text>'
        b'<text font-family="B">3</text></svg>'
    )
    out = compact_svg(svg)
    assert (
        out
        == b'<svg font-family="B"><text font-family="A">1</text><text>2</text><text>3</text></svg>'
    )
    assert compact_svg(out) == out


def test_no_hoist_when_a_group_sets_a_family_or_the_root_is_not_svg():
    grouped = b'<svg><g font-family="A"><text font-family="B">1</text></g></svg>'
    assert compact_svg(grouped) == grouped  # the text would inherit A instead of B
    fragment = b'<g><text font-family="B" opacity="1">1</text></g>'
    assert compact_svg(fragment) == b'<g><text font-family="B">1</text></g>'
