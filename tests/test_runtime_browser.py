"""runtime.js in Chromium from file://: first render, chunk loading, failures, hostile tokens.

The page here is the minimal one that ``attnreport.charts.export.embed`` documents: the raw
``vl_convert.javascript_bundle()`` and ``runtime.js`` as classic scripts, then one
``.ar-chart`` div and one JSON payload script per figure, chunk files in a folder.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import altair as alt
import numpy as np
import pytest
import vl_convert

from attnreport.charts.export.embed import chunk_files, figure_payload, runtime_js
from attnreport.charts.figure import Figure
from attnreport.charts.figures import attention, breakdown, interventions
from attnreport.charts.spec.assemble import build_figure
from attnreport.charts.spec.renderer import CANVAS_MARKS
from attnreport.results.codec import compact_values, decode_column, encode_column
from tests.fixtures.fake_results import (
    fake_manifest,
    fake_sentence,
    fake_study,
    typed,
    typed_manifest,
    typed_sentence,
)

pytestmark = pytest.mark.browser
HOSTILE = ["</script><img src=x onerror=alert(1)>", " it's", ' "q"', " \u05e9\u05dc", " \U0001f600"]
RECTS = "el => el.querySelectorAll('.mark-rect.role-mark path').length"  # heatmap cells
READY = "document.body.dataset.chartsReady === '4'"  # every chart drew its first view


def write_page(folder: Path, figures: list[Figure]) -> Path:
    """The documented DOM protocol, written by hand (the site writer does the same)."""
    (folder / "assets").mkdir(parents=True)
    (folder / "assets" / "vega.js").write_text(vl_convert.javascript_bundle(), encoding="utf-8")
    (folder / "assets" / "runtime.js").write_text(runtime_js(), encoding="utf-8")
    body = []
    for fig in figures:
        chunk_dir = folder / "data" / fig.key
        chunk_dir.mkdir(parents=True)
        for name, source in chunk_files(fig).items():
            (chunk_dir / name).write_text(source, encoding="utf-8")
        body.append(
            f'<div class="ar-chart" id="ar-chart-{fig.key}" data-key="{fig.key}" '
            f'data-chunks="data/{fig.key}/"></div>\n'
            f'<script type="application/json" id="ar-data-{fig.key}">{figure_payload(fig)}</script>'
        )
    page = folder / "index.html"
    page.write_text(
        '<!doctype html><html><head><meta charset="utf-8">'
        '<script src="assets/vega.js"></script><script src="assets/runtime.js"></script>'
        "</head><body>" + "\n".join(body) + "</body></html>",
        encoding="utf-8",
    )
    return page


SENTENCE = fake_sentence(0, tokens=HOSTILE, n_tokens=len(HOSTILE))


@pytest.fixture(scope="module")
def page_path(tmp_path_factory) -> Path:
    study = typed(fake_study(n_tokens=len(HOSTILE)))
    sentence = typed_sentence(SENTENCE)
    manifest = typed_manifest(fake_manifest([SENTENCE], n_layers=4, n_heads=3))
    figures = [
        attention.attention_map_figure(sentence),
        interventions.scaling_figure(study.interventions, sentence, manifest),
        breakdown.breakdown_figure(sentence, manifest),
        breakdown.bias_position_figure(sentence, manifest),  # reads the breakdown's chunks
    ]
    folder = tmp_path_factory.mktemp("runtime") / "site"
    path = write_page(folder, figures)
    FILES.update({f.key: f.chunk_names for f in figures})
    missing = chunk_file("attention-map", 3)
    (folder / missing).unlink()  # a missing chunk
    return path


FILES: dict[str, dict[str, str]] = {}  # figure key -> layer -> its data file's chunk name


def chunk_file(key: str, layer: int) -> str:
    """The data file (relative to the page) that holds ``layer``'s rows of figure ``key``:
    several small layers share one file."""
    return f"data/{key}/{key}--{FILES[key][str(layer)]}.js"


def set_slider(page, chart: str, index: int, value: int) -> None:
    slider = page.locator(f"#ar-chart-{chart} input[type=range]").nth(index)
    slider.fill(str(value))
    slider.dispatch_event("input")


def test_runtime_renders_and_loads_chunks_from_file_urls(offline_page, page_path):
    page = offline_page.page
    page.goto(page_path.as_uri())
    page.wait_for_function(READY)
    charts = page.locator(".ar-chart")
    assert [charts.nth(i).get_attribute("data-rendered") for i in range(4)] == ["true"] * 4
    chart = page.locator("#ar-chart-attention-map")
    n = len(HOSTILE)
    assert chart.evaluate(RECTS) == n * (n + 1) // 2

    layer, head = (
        int(v)
        for v in page.locator("#ar-chart-attention-map input").evaluate_all(
            "els => els.map(e => e.value)"
        )
    )
    loaded = {chunk_file("attention-map", layer), chunk_file("attention-map", 3)}
    other = next(la for la in range(4) if chunk_file("attention-map", la) not in loaded)
    set_slider(page, "attention-map", 0, other)
    script = chunk_file("attention-map", other)  # every head of the layer
    page.wait_for_function(f"!!document.querySelector('script[src=\"{script}\"]')")
    page.wait_for_function("!document.getElementById('ar-chart-attention-map').dataset.loading")
    cells = f"({RECTS})(document.getElementById('ar-chart-attention-map')) === {n * (n + 1) // 2}"
    page.wait_for_function(cells)
    assert f"layer {other}" in chart.locator(".role-title-text").first.text_content()

    set_slider(page, "attention-map", 1, 0)
    set_slider(page, "attention-map", 0, 3)  # its chunk file was removed
    status = page.locator("#ar-chart-attention-map + .ar-status")
    status.filter(has_text="Could not load").wait_for()

    grid_head = int(page.locator("#ar-chart-scaling-grid input[type=range]").input_value())
    page.locator("#ar-chart-scaling-grid input[value=last]").check()
    assert grid_head >= 0
    last = f"scaling-grid--{FILES['scaling-grid']['last']}.js"  # every head of the last layer
    page.wait_for_function(f"!!document.querySelector('script[src$=\"{last}\"]')")
    # the only error is the chunk file removed on purpose
    assert offline_page.errors == ["Failed to load resource: net::ERR_FILE_NOT_FOUND"]
    assert offline_page.dialogs == [] and offline_page.blocked == []


def test_hostile_tokens_are_drawn_as_text(offline_page, page_path):
    page = offline_page.page
    page.goto(page_path.as_uri())
    page.wait_for_function(READY)
    labels = page.locator("#ar-chart-attention-map .role-axis-label text").all_text_contents()
    assert "0 </script><img" in labels[0]  # the label is cut at 120 px, drawn as text
    assert page.locator("img").count() == 0
    assert offline_page.dialogs == [] and offline_page.errors == []


def tooltip_fields(page) -> dict[str, str]:
    """Title -> value of the rows of the visible Vega tooltip."""
    tooltip = page.locator("#vg-tooltip-element")
    tooltip.wait_for(state="visible")
    rows = tooltip.locator("tr").evaluate_all(
        "trs => trs.map(tr => [...tr.querySelectorAll('td')].map(td => td.textContent))"
    )
    return {row[0]: row[1] for row in rows if len(row) == 2}


def test_tooltip_shows_probability_and_rank_computed_in_the_browser(offline_page, page_path):
    """The chunk carries scores only; the spec derives p_ij and the rank, which must match."""
    page = offline_page.page
    page.goto(page_path.as_uri())
    page.wait_for_function(READY)
    chart = page.locator("#ar-chart-attention-map")
    layer, head = (
        int(v) for v in chart.locator("input").evaluate_all("es => es.map(e => e.value)")
    )
    att = SENTENCE["attention"]
    cells = chart.locator(".mark-rect.role-mark path")
    seen = set()
    for index in range(cells.count()):
        box = cells.nth(index).bounding_box()
        page.mouse.move(box["x"] + box["width"] * 0.2, box["y"] + box["height"] * 0.2)
        tip = tooltip_fields(page)
        i, j = int(tip["current position"]), int(tip["target position"])
        assert abs(float(tip["probability p_ij"]) - att["probs"][layer][head][i][j]) < 1e-3, tip
        assert int(tip["rank in row (0 = top)"]) == att["ranks"][layer][head][i][j], tip
        assert (tip["layer"], tip["head"]) == (str(layer), str(head))
        assert tip["current token"] and tip["target token"] and tip["score s_ij"]
        seen.add((i, j))
    assert len(seen) == len(HOSTILE) * (len(HOSTILE) + 1) // 2
    assert offline_page.errors == []


def test_shared_chunk_file_is_loaded_once_for_both_figures(offline_page, page_path):
    """Bias vs position has no files of its own: it loads the breakdown's, and a layer
    loaded for one figure is not loaded again for the other."""
    page = offline_page.page
    page.goto(page_path.as_uri())
    page.wait_for_function(READY)
    layer = int(page.locator("#ar-chart-bias-vs-position input[type=range]").first.input_value())
    other = 2 if layer != 2 else 1
    src = chunk_file("attention-breakdown", other)
    scripts = f"document.querySelectorAll('script[src=\"{src}\"]').length"
    points = "el => el.querySelectorAll('.mark-symbol.role-mark path').length"
    idle = "key => !document.getElementById('ar-chart-' + key).dataset.loading"
    bias = page.locator("#ar-chart-bias-vs-position")

    # The default view is drawn from the breakdown's inline rows: the page carries them
    # once (this payload's inline is null) and no data file is loaded for them.
    payload = json.loads(page.locator("#ar-data-bias-vs-position").text_content())
    assert payload["inline"] is None and payload["inline_chunk"]
    page.wait_for_function(
        f"el => ({points})(el) === {len(HOSTILE) * 2}", arg=bias.element_handle()
    )
    assert (
        page.evaluate("document.querySelectorAll('script[src*=\"attention-breakdown--\"]').length")
        == 0
    )

    set_slider(page, "bias-vs-position", 0, other)
    page.wait_for_function(f"{scripts} === 1")
    page.wait_for_function(idle, arg="bias-vs-position")
    page.wait_for_function(
        f"el => ({points})(el) === {len(HOSTILE) * 2}", arg=bias.element_handle()
    )  # one point per token for the bias and the position term (RoPE)
    assert f"layer {other}" in bias.locator(".role-title-text").first.text_content()

    set_slider(page, "attention-breakdown", 0, other)
    page.wait_for_function(idle, arg="attention-breakdown")
    title = page.locator("#ar-chart-attention-breakdown .role-title-text").first
    page.wait_for_function(
        f"el => el.textContent.includes('layer {other},')", arg=title.element_handle()
    )
    bars = page.locator("#ar-chart-attention-breakdown .mark-rect.role-mark path")
    assert bars.count() == len(HOSTILE) * 5  # four term bars and the total tick per token
    assert page.evaluate(scripts) == 1
    assert page.locator("#ar-chart-bias-vs-position + .ar-status").text_content() == ""
    # the layer is the page's: the attention map followed it, to the file removed on purpose
    # when that layer shares it with layer 3
    missing = chunk_file("attention-map", other) == chunk_file("attention-map", 3)
    assert offline_page.errors == ["Failed to load resource: net::ERR_FILE_NOT_FOUND"] * missing


def cell_chart(key: str, columns: int) -> alt.Chart:
    """Rect cells of the group a slider picks, coloured by value; every cell has a tooltip."""
    group = alt.param(name="group", value=1, bind=alt.binding_range(min=0, max=2, step=1))
    return (
        alt.Chart(alt.Data(name=key))
        .transform_filter("datum.group == group")
        .mark_rect()
        .encode(
            x=alt.X("col:O", axis=None),
            y=alt.Y("row:O", axis=None),
            color=alt.Color("value:Q", legend=None),
            tooltip=["group:O", "row:O", "col:O"],
        )
        .add_params(group)
        .properties(width=columns * 10, height=300)
    )


def cell_figure(key: str, cells: int, columns: int) -> Figure:
    """``cells`` cells in each of three groups; a group's colours differ from the others'."""
    n = cells * 3
    rows = {
        "group": [i // cells for i in range(n)],
        "row": [(i % cells) // columns for i in range(n)],
        "col": [i % columns for i in range(n)],
        "value": [((i % cells) + 3 * (i // cells)) % 7 / 6 for i in range(n)],
    }
    return build_figure(key=key, title=key, caption=key, chart=cell_chart(key, columns), rows=rows)


@pytest.fixture(scope="module")
def renderer_page(tmp_path_factory) -> Path:
    """One figure just past CANVAS_MARKS marks, one far below it."""
    big = cell_figure("many-cells", CANVAS_MARKS + 200, 40)
    small = cell_figure("few-cells", 50, 10)
    assert (big.renderer, small.renderer) == ("canvas", "svg")
    return write_page(tmp_path_factory.mktemp("renderer") / "site", [big, small])


PAINTED = """el => {
    const canvas = el.querySelector('canvas');
    const data = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
    let painted = 0;
    for (let i = 0; i < data.length; i += 4) {
        if (data[i + 3] > 0 && (data[i] < 250 || data[i + 1] < 250 || data[i + 2] < 250)) painted++;
    }
    return [painted, canvas.width * canvas.height, canvas.toDataURL()];
}"""


def hover_middle(page, element) -> dict[str, str]:
    """Point at the middle of ``element``; the tooltip's fields."""
    page.mouse.move(0, 0)
    box = element.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    return tooltip_fields(page)


def test_many_marks_draw_on_a_canvas_with_tooltips_and_widgets(offline_page, renderer_page):
    page = offline_page.page
    page.goto(renderer_page.as_uri())
    page.wait_for_function("document.body.dataset.chartsReady === '2'")
    big, small = page.locator("#ar-chart-many-cells"), page.locator("#ar-chart-few-cells")

    assert big.locator("svg.marks").count() == 0 and big.locator("canvas").count() == 1
    painted, area, before = big.evaluate(PAINTED)
    assert painted > area / 2  # the cells cover the canvas but for its padding
    tip = hover_middle(page, big.locator("canvas"))
    assert tip["group"] == "1" and 10 <= int(tip["row"]) <= 20 and 15 <= int(tip["col"]) <= 25

    set_slider(page, "many-cells", 0, 2)  # another group: other colours, other tooltips
    page.wait_for_function(
        f"el => ({PAINTED})(el)[2] !== {json.dumps(before)}", arg=big.element_handle()
    )
    assert hover_middle(page, big.locator("canvas"))["group"] == "2"

    assert small.locator("canvas").count() == 0
    cells = small.locator("svg.marks .mark-rect.role-mark path")
    assert cells.count() == 50
    cell = cells.nth(25).bounding_box()
    page.mouse.move(cell["x"] + cell["width"] / 2, cell["y"] + cell["height"] / 2)
    assert tooltip_fields(page) == {"group": "1", "row": "2", "col": "5"}
    assert offline_page.errors == [] and offline_page.dialogs == []


def packed_columns() -> list[tuple[object, list]]:
    """(encoded column, the values its plain array holds): every form the site writes, the
    packed one at each width, with and without exceptions, and hand-made packed columns at
    each width's extremes and every d up to 22."""
    rng = np.random.default_rng(0)
    scores = np.round(rng.normal(2, 3, 500), 3).tolist()
    scores[7], scores[300] = 2.86481, -0.371456  # 6 significant digits
    odd = rng.integers(-30_000, 30_000, 200).tolist() + [2**40, 1e-7, 1e300, -2.5]
    columns = [
        [1, 0.5, "a", None],
        [0] * 50 + [3] * 20,
        list(range(0, 300, 3)),
        rng.integers(0, 100, 300).tolist(),  # 1 byte
        rng.integers(-30_000, 30_000, 300).tolist(),  # 2 bytes
        rng.integers(-(2**31) + 1, 2**31, 300).tolist(),  # 4 bytes
        np.round(rng.normal(0, 3, 300), 1).tolist(),  # 1 decimal, 1 byte
        scores,  # 3 decimals, 2 bytes, exceptions
        np.round(rng.random(300), 4).tolist(),  # 4 decimals, 2 bytes
        np.round(rng.normal(0, 300, 300), 5).tolist(),  # 5 decimals, 4 bytes
        np.round(rng.normal(0, 30, 300), 6).tolist(),  # 6 decimals, 4 bytes
        [v / 10 for v in odd],  # exceptions of every kind
    ]
    # the plain array as the site would write it: -0.0 as 0, 2.0 as 2
    out = [(encode_column(v, binary=True), compact_values(v)) for v in columns]
    extremes = [(1, [-128, 127, 0, -1]), (2, [-32768, 32767, 5]), (4, [-(2**31), 2**31 - 1, 7])]
    for d in range(23):
        for width, ints in extremes:
            data = b"".join(q.to_bytes(width, "little", signed=True) for q in ints)
            form = {"b": [d, width, base64.b64encode(data).decode()], "x": [1, 0.1]}
            out.append((form, decode_column(form)))
    return out


def test_columns_decode_in_the_browser_to_the_plain_numbers(offline_page, tmp_path):
    """``decodeColumn`` gives, value for value (``Object.is``), what ``JSON.parse`` of the
    plain array gives; so does Python's reference decoder."""
    columns = packed_columns()
    forms = {
        tuple(c["b"][:2]) + ("x" in c,) for c, _ in columns if isinstance(c, dict) and "b" in c
    }
    widths = {(d, w) for d, w, _ in forms}
    assert widths >= {(0, 1), (0, 2), (0, 4), (1, 1), (3, 2), (4, 2), (5, 4), (6, 4)}
    assert (3, 2, True) in forms and (0, 4, True) in forms
    assert {"r", "d"} <= {k for c, _ in columns if isinstance(c, dict) for k in c}
    for encoded, values in columns:
        assert decode_column(encoded) == values
    (tmp_path / "runtime.js").write_text(runtime_js(), encoding="utf-8")
    page_file = tmp_path / "index.html"
    page_file.write_text('<!doctype html><script src="runtime.js"></script>', encoding="utf-8")
    page = offline_page.page
    page.goto(page_file.as_uri())
    mismatches = page.evaluate(
        """([encoded, plain]) => JSON.parse(encoded).map((column, i) => {
            const got = window.attnreport.decodeColumn(column), want = JSON.parse(plain)[i];
            if (got.length !== want.length) return `${i}: ${got.length} values, not ${want.length}`;
            const j = want.findIndex((v, j) => !Object.is(got[j], v));
            return j < 0 ? null : `${i}[${j}]: ${got[j]} is not ${want[j]}`;
        })""",
        [json.dumps([c for c, _ in columns]), json.dumps([v for _, v in columns])],
    )
    assert mismatches == [None] * len(columns)
    assert offline_page.errors == []
