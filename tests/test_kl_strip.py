"""The KL strip under the intervention grids (charts/figures/kl_strip): fixed scales from
every cell's KL, coinciding lines found and drawn side by side, and the grids' phone spec
shipped as a data file of its own."""

from __future__ import annotations

import json

import pytest

from attnreport.charts.export.embed import chunk_files, payload_dict
from attnreport.charts.figures.interventions import scaling_figure
from attnreport.charts.figures.kl_strip import DODGE, series, strip_of, together_sentence
from tests.fixtures.fake_results import fake_study, typed


def _rows(kl: dict[tuple[str, str], list[float]]) -> dict[str, list]:
    """A grid's rows as the figures make them: (query, key) pairs, KL along each row."""
    rows = {name: [] for name in ("target", "eps", "query", "key", "kl")}
    for (target, eps), values in kl.items():
        for q, value in enumerate(values):
            for k in range(q + 1):
                for name, v in zip(rows, (target, eps, q, k, value), strict=True):
                    rows[name].append(v)
    return rows


def test_lines_that_coincide_at_the_axis_scale_are_found_and_shifted_apart():
    order = ["\u03b5 = 0.5", "\u03b5 = 0.001", "\u03b5 = 1e-10"]
    kl = {
        ("Q", "unmodified"): [0.0, 0.0, 0.0],
        ("Q", order[0]): [0.0, 0.1, 0.2],
        ("Q", order[1]): [0.0, 0.5, 1.0],
        ("Q", order[2]): [0.0, 0.5, 1.0 - 0.004],  # within 1% of the axis (top 1.0)
        ("V", order[0]): [0.0, 0.3, 0.6],
        ("V", order[1]): [0.0, 0.3, 0.6 + 0.02],  # 2% apart at position 2: two lines
    }
    lines = series(_rows(kl), "target", "eps")
    assert ("Q", "unmodified") not in lines and lines[("Q", order[1])] == [0.0, 0.5, 1.0]
    strip = strip_of(lines, order)
    assert (strip.positions, strip.top) == (3, 1.0)
    assert strip.together == (("Q", (order[1], order[2])),)
    assert strip.offsets == {order[0]: -DODGE, order[1]: 0.0, order[2]: DODGE}
    assert "\u03b5 = 0.001 and \u03b5 = 1e-10 for Q" in together_sentence(strip)


def test_lines_apart_are_not_shifted_and_the_caption_says_nothing():
    lines = {("Q", "a"): [0.0, 1.0], ("Q", "b"): [0.0, 0.5]}
    strip = strip_of(lines, ["a", "b"])
    assert strip.together == () and strip.offsets == {} and together_sentence(strip) == ""


@pytest.fixture(scope="module")
def study():
    return typed(fake_study(3, n_layers=3, n_heads=2))


def test_the_strip_scales_are_fixed_from_every_cells_kl(study):
    """A cell's KL is the same for every head and observed layer: the strip's axes cover
    every cell's, whatever rows are loaded (an empty view has nothing to take an extent of)."""
    iv = study.interventions
    fig = scaling_figure(iv, study.sentences[0], study.manifest, study.sentences)
    strip = fig.spec["vconcat"][1]["spec"]
    y = strip["encoding"]["y"]["scale"]["domain"]
    x = strip["encoding"]["x"]["scale"]["domain"]
    drawn = iv.scaling.shown  # the strip draws the input whose maps are drawn
    assert y == [0, pytest.approx(max(v for c in drawn for v in c.kl), abs=1e-4)]
    assert x == [-0.5, len(drawn[0].kl) - 0.5]


def test_a_grid_ships_its_phone_spec_in_a_data_file_of_its_own(study):
    fig = scaling_figure(study.interventions, study.sentences[0], study.manifest, study.sentences)
    payload = payload_dict(fig)
    assert payload["phone"] == "phone"  # the page names the file, it does not carry it
    text = chunk_files(fig)["scaling-grid--phone.js"]
    prefix = 'window.attnreport.register("scaling-grid--phone", '
    assert text.startswith(prefix)
    vega = json.loads(text[len(prefix) : -len(");\n")])
    assert any(d["name"] == "scaling-grid" for d in vega["data"])  # compiled Vega, same data set
    bound = {s["name"] for s in vega["signals"] if "bind" in s}
    assert {"tensor", "eps", "head", "observation"} <= bound
    assert vega["usermeta"] == {"relayout": True}
