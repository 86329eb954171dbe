"""Several models in one report (issue 31): a comparison index on relative depth, each
model's own pages, render of several folders torch-free and equal to the build."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from attnreport.analyses import sinks
from attnreport.cli import main
from attnreport.results.io import load
from tests.tiny_models import save_tiny_model

ROOT = Path(__file__).resolve().parent.parent
SENTENCES = (
    "the cat sat on the mat and the dog sat on a mat .",
    "the dog chased the cat and the cat chased the mouse .",
    "what does the attention mechanism focus on ?",
)
FULL = "full_attention"


def cli(*args: str):
    return CliRunner().invoke(main, list(args))


def tree(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def with_layers(folder: Path, layer_types: list[str]) -> Path:
    """The tiny Gemma 3 in ``folder`` with its layer types set (same weights)."""
    path = folder / "config.json"
    config = json.loads(path.read_text())
    config["layer_types"] = layer_types
    path.write_text(json.dumps(config))
    return folder


@pytest.fixture(scope="module")
def pair(tmp_path_factory) -> dict[str, Path]:
    """Two tiny Gemma 3 models with the same weights: ``windowed`` has a 4-token sliding
    window on its last layer (of 3), ``full`` attends fully everywhere; both analysed on
    the same sentences (14 tokens at most: the window hides the first token from late
    queries)."""
    root = tmp_path_factory.mktemp("comparison")
    windowed = save_tiny_model("gemma3", root / "windowed")
    shutil.copytree(windowed, root / "full")
    with_layers(windowed, [FULL, FULL, "sliding_attention"])
    with_layers(root / "full", [FULL, FULL, FULL])
    (root / "sentences.txt").write_text("\n".join(SENTENCES) + "\n")
    config = root / "attnreport.toml"
    config.write_text(
        'models = ["./windowed", "./full"]\nsentences = "sentences.txt"\n'
        'title = "Two tiny models"\nimages = false\n'
    )
    result = cli("analyze", "--config", str(config), "--out", str(root / "results"))
    assert result.exit_code == 0, result.output
    return {"root": root, "config": config, "results": root / "results"}


@pytest.fixture(scope="module")
def site_dir(pair, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site") / "site"
    args = ("render", str(pair["results"]), "--out", str(out), "--config", str(pair["config"]))
    result = cli(*args)
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="module")
def site(site_dir) -> dict[str, bytes]:
    return tree(site_dir)


def curves(files: dict[str, bytes]) -> dict[tuple[str, str], dict[float, float]]:
    """(model, statistic) -> {depth: value} from the site's ``results/comparison.json``."""
    rows = json.loads(files["results/comparison.json"])["curves"]
    out: dict[tuple[str, str], dict[float, float]] = {}
    for model, stat, depth, value in zip(
        rows["model"], rows["statistic"], rows["depth"], rows["value"], strict=True
    ):
        out.setdefault((model, stat), {})[depth] = value
    return out


def role_curves(files: dict[str, bytes]) -> dict[tuple[str, str], dict[int, tuple]]:
    """(model, role) -> {layer: (depth, heads, of, percent)} from ``role_curves``."""
    rows = json.loads(files["results/comparison.json"])["role_curves"]
    out: dict[tuple[str, str], dict[int, tuple]] = {}
    for i, model in enumerate(rows["model"]):
        point = tuple(rows[k][i] for k in ("depth", "heads", "of", "percent"))
        out.setdefault((model, rows["role"][i]), {})[rows["layer"][i]] = point
    return out


def atlas_roles(folder: Path) -> tuple[np.ndarray, list[str]]:
    """Each head's layer and role by the head atlas's rule, counted here from the
    results' own head-role table: the largest of the previous-token, duplicate-token and
    induction scores at 0.3 or more, else a sink when its pooled first-token probability
    reaches 0.3, else no role."""
    results = load(folder)
    assert results.set.head_roles is not None
    table = results.set.head_roles.arrays()
    first = sinks.pooled_scores(results.set.focus_by_sentence.arrays(), "first_prob")
    names = ["previous token", "duplicate token", "induction"]
    scores = np.stack([np.asarray(table[k], float) for k in ("previous_token", "duplicate_token", "induction")])  # fmt: skip
    roles = []
    for i, (layer, head) in enumerate(zip(table["layer"], table["head"], strict=True)):
        best = int(np.argmax(scores[:, i]))
        sink = first.get((int(layer), int(head)), 0.0) >= 0.3
        roles.append(names[best] if scores[best, i] >= 0.3 else "first token (sink)" if sink else "")  # fmt: skip
    return np.asarray(table["layer"], int), roles


class Text(HTMLParser):
    """The visible text of each ``<p id=...>`` of a page, by id."""

    def __init__(self) -> None:
        super().__init__()
        self.by_id: dict[str, str] = {}
        self.current: str | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "p" and dict(attrs).get("id"):
            self.current = dict(attrs)["id"]
            self.by_id[self.current] = ""

    def handle_endtag(self, tag):
        if tag == "p":
            self.current = None

    def handle_data(self, data):
        if self.current:
            self.by_id[self.current] += data


def findings(files: dict[str, bytes]) -> dict[str, str]:
    parser = Text()
    parser.feed(files["index.html"].decode())
    return {k.removeprefix("finding-"): v for k, v in parser.by_id.items()}


def test_each_model_has_its_own_pages_results_and_the_shared_assets(site):
    listed = json.loads(site["results/models.json"])["results"]
    assert listed == ["../windowed/results", "../full/results"]
    for slug in ("windowed", "full"):
        assert f"{slug}/results/manifest.json" in site
        pages = [n for n in site if re.fullmatch(rf"{slug}/s\d{{3}}-[a-z0-9-]+\.html", n)]
        assert len(pages) == len(SENTENCES)
        html = site[f"{slug}/index.html"].decode()
        assert 'href="../assets/style.css"' in html and 'src="../assets/vega.js"' in html
        assert '<a class="up" href="../index.html">' in html
        page = site[pages[0]].decode()  # every sentence page says how each model split it
        text = re.sub(r"<[^>]+>", "", page)
        said = re.search(rf"{slug} split this sentence into the (\d+) tokens below; (.*)", text)
        other = "full" if slug == "windowed" else "windowed"
        assert said and said[1] == "15" and said[2].startswith(f"{other} into 15: "), pages[0]
        assert re.search(r"into 15: &lt;s&gt; the cat sat on", said[2]), said[2]
        assert not any(n.startswith(f"{slug}/assets/") for n in site)
    index = site["index.html"].decode()
    assert 'href="windowed/index.html"' in index and 'href="full/index.html"' in index


def test_a_sliding_window_shows_at_the_windowed_layer_only(site):
    """Same weights; only layer 2 (depth 1) of ``windowed`` has a window: the layers
    before it are identical, and the first-token focus of that layer differs."""
    lines = curves(site)
    for stat in ("first_focus", "self_focus", "sink_rate", "head_impact"):
        mine, theirs = lines[("windowed", stat)], lines[("full", stat)]
        assert sorted(mine) == sorted(theirs) == [0.0, 0.5, 1.0]
        for depth in (0.0, 0.5):
            assert mine[depth] == pytest.approx(theirs[depth], abs=1e-6), (stat, depth)
    last = [abs(lines[("windowed", s)][1.0] - lines[("full", s)][1.0]) for s in ("first_focus", "self_focus")]  # fmt: skip
    assert max(last) > 0.01
    said = findings(site)
    assert "windowed has sliding-window attention on 1 of its 3 layers (layer 2)" in said["windows"]
    assert "shorter than the longest sentence" in said["windows"]
    assert "difference" not in said  # no maximum picked from the curves, none interpolated


def test_a_model_compared_with_itself_shows_no_difference(pair, tmp_path):
    one = pair["results"] / "full"
    out = tmp_path / "site"
    result = cli("render", str(one), str(one), "--out", str(out), "--config", str(pair["config"]))
    assert result.exit_code == 0, result.output
    files = tree(out)
    lines = curves(files)
    models = sorted({model for model, _ in lines})
    assert len(models) == 2
    for stat in ("first_focus", "self_focus", "sink_rate", "head_impact"):
        assert lines[(models[0], stat)] == lines[(models[1], stat)]
    by_role = role_curves(files)
    for role in {role for _, role in by_role}:
        assert by_role[(models[0], role)] == by_role[(models[1], role)]
        assert by_role[(models[0], role)], role
    said = findings(files)
    assert "split-verdict" not in said  # a model never parts from itself on a claim


def test_render_of_two_folders_needs_no_torch_and_equals_the_build(pair, tmp_path):
    built = tmp_path / "built"
    result = cli("build", "--config", str(pair["config"]), "--out", str(built))
    assert result.exit_code == 0, result.output
    rendered = tmp_path / "rendered"
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from attnreport.cli import main\n"
        f"r = CliRunner().invoke(main, ['render', {str(pair['results'])!r}, '--out', "
        f"{str(rendered)!r}, '--config', {str(pair['config'])!r}])\n"
        "assert r.exit_code == 0, r.output\n"
        "print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
    first, second = tree(built), tree(rendered)
    assert sorted(first) == sorted(second)
    assert [n for n in first if first[n] != second[n]] == []
    again = tmp_path / "again"  # the site's own results/ renders it again
    assert cli("render", str(built / "results"), "--out", str(again)).exit_code == 0
    assert tree(again) == first


def test_role_curves_are_each_layers_share_of_heads_per_role(pair, site):
    """Per model, role and layer: the heads with the role over the layer's heads, as
    the head-role tables count them; drawn as one panel per role, 2 columns wide."""
    lines = role_curves(site)
    roles = ["previous token", "duplicate token", "induction", "first token (sink)"]
    assert sorted(lines) == sorted((m, r) for m in ("windowed", "full") for r in roles)
    seen = 0
    for model in ("windowed", "full"):
        layers, atlas = atlas_roles(pair["results"] / model)
        for role in roles:
            points = lines[(model, role)]
            assert sorted(points) == [0, 1, 2]
            for layer, (depth, heads, of, percent) in points.items():
                mine = [r for r, lay in zip(atlas, layers, strict=True) if lay == layer]
                assert (depth, heads, of) == (layer / 2, mine.count(role), len(mine))
                assert percent == pytest.approx(100 * mine.count(role) / len(mine), abs=1e-5)
                seen += heads
    assert seen > 0  # some head of the tiny models takes a role
    totals = json.loads(site["results/comparison.json"])["roles"]  # the bar chart's counts
    for model, role, heads in zip(totals["model"], totals["role"], totals["heads"], strict=True):
        if role in roles:
            assert sum(p[1] for p in lines[(model, role)].values()) == heads
    index = site["index.html"].decode()
    assert 'data-key="compare-role-curves"' in index and 'data-key="compare-roles"' in index
    payload = re.search(r'id="ar-data-compare-role-curves">(.*?)</script>', index, re.S)
    assert payload and '"columns":2' in payload[1].replace(" ", "")


def test_intervention_layers_are_matched_by_relative_depth(site):
    kl = json.loads(site["results/comparison.json"])["kl"]
    depths = {m: d for m, d in zip(kl["model"], kl["depth"], strict=True)}
    assert depths["windowed"] == depths["full"]
    said = findings(site)["interventions"]
    assert "the same relative depth" in said
    # each model's own page says why its interventions run where they do
    first, second = site["windowed/index.html"].decode(), site["full/index.html"].decode()
    assert "by the default rule: of the model's" in first.replace("&#39;", "'")
    assert "the comparison runs each model&#39;s interventions at matched depths" in second


def test_different_sentence_sets_are_refused_in_one_line(pair, tmp_path):
    other = tmp_path / "other.txt"
    other.write_text("the cat sat .\n")
    out = tmp_path / "other"
    result = cli("analyze", "--model", str(pair["root"] / "full"), "--sentences", str(other), "--out", str(out))  # fmt: skip
    assert result.exit_code == 0, result.output
    result = cli("render", str(pair["results"] / "windowed"), str(out), "--out", str(tmp_path / "s"))  # fmt: skip
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "were run on different sentences" in lines[0], lines
    assert not (tmp_path / "s").exists()


def test_compare_takes_folders_of_several_models(pair):
    result = cli("compare", str(pair["results"]), str(pair["results"]))
    assert result.exit_code == 0, result.output
    result = cli("compare", str(pair["results"]), str(pair["results"] / "full"))
    assert result.exit_code == 1 and "different numbers of models" in result.output


def test_the_claims_are_tested_per_model_and_the_cards_sit_side_by_side(site):
    index = site["index.html"].decode()
    table = index[index.index('<table class="claims-compare">') :]
    rows = re.findall(r'<tr id="claim-([a-z0-9-]+)">', table)
    assert rows
    cells = re.findall(r'<td data-verdict="([a-z ]*)">', table)
    assert len(cells) == 2 * len(rows)
    cards = index[index.index('<table class="models">') : index.index("</table>")]
    row = '<th scope="row">Sliding windows</th><td>1 of 3 layers, 4 tokens</td><td>none</td>'
    assert row in cards


@pytest.mark.browser
def test_the_comparison_and_each_model_draw_every_chart(site_dir, offline_page):
    from tests.browser import ALL_DRAWN, DRAW_MS

    for path in (site_dir / "index.html", site_dir / "windowed" / "index.html"):
        page = offline_page.page
        page.goto(path.as_uri())
        page.wait_for_function(ALL_DRAWN, timeout=DRAW_MS)
        charts = page.query_selector_all(".ar-chart")
        assert charts, path
        assert {c.get_attribute("data-rendered") for c in charts} == {"true"}, path
    keys = [c.get_attribute("data-key") for c in page.query_selector_all(".ar-chart")]
    assert "set-first-focus" in keys  # the model's own report, drawn with ../assets
    assert offline_page.errors == [] and offline_page.blocked == []


# The left edge of each role panel's plot in the role-curves chart.
PANELS = """() => [...document.querySelectorAll(
  '#ar-chart-compare-role-curves svg .role-scope.child_layer_0_pathgroup')]
  .map(g => Math.round(g.getBoundingClientRect().left))"""


@pytest.mark.browser
@pytest.mark.parametrize(("width", "columns"), [(1280, 2), (390, 1)])
def test_the_role_panels_wrap_to_the_window(site_dir, offline_page, width, columns):
    from tests.test_figure_layout_browser import OVERFLOW, open_at

    page = open_at(offline_page, (site_dir / "index.html").as_uri(), width)
    lefts = page.evaluate(PANELS)
    assert len(lefts) == 4 and len(set(lefts)) == columns, lefts
    assert page.evaluate(OVERFLOW) == []
    assert offline_page.errors == []


def test_every_comparison_figure_has_alt_text_from_its_rows(site):
    """Each chart of the comparison index is described to a screen reader: what is plotted
    and, per model, the peak its own rows hold (recomputed here from comparison.json)."""
    from html.parser import HTMLParser

    labels: dict[str, str] = {}

    class Charts(HTMLParser):
        def handle_starttag(self, tag, attrs):
            a = dict(attrs)
            if "ar-chart" in (a.get("class") or "").split():
                labels[a["data-key"]] = a.get("aria-label", "")

    Charts().feed(site["index.html"].decode())
    assert labels and all("chart" in text.lower() for text in labels.values()), labels
    lines = curves(site)
    for model in ("windowed", "full"):
        peak = max(lines[(model, "first_focus")].items(), key=lambda kv: kv[1])
        assert f"{model} peaks at {peak[1]:.3g} at depth {peak[0]:.2f}" in labels["compare-first-focus"]  # fmt: skip
    assert "%" in labels["compare-sink-rate"].split("peaks at", 1)[1]


def test_update_sizes_take_a_log_scale_when_they_span_decades_and_say_how_they_were_taken():
    """Update sizes are ratios that can span orders of magnitude (Gemma-3's first layers
    about 2 x ||x||, SmolLM2's layers 0.03): past two decades a log axis keeps every
    model's curve readable, chosen from the values (not the model); within two, a linear
    one. The shares keep a linear axis (the sink rate on 0-100). Models whose sizes are
    taken differently (before or after a post-attention norm) are told apart."""
    from attnreport.charts.figures.comparison import curve_figure

    def rows(values: list[float]) -> dict[str, list]:
        n = len(values)
        return {"statistic": ["head_impact"] * n + ["sink_rate"], "model": ["A", "B"] * (n // 2) + ["A"],
                "layer": list(range(n)) + [0], "depth": [0.0] * (n + 1), "value": values + [50.0]}  # fmt: skip

    wide = curve_figure(rows([2.5, 0.02, 0.01, 0.3]), "head_impact", ["A", "B"])
    narrow = curve_figure(rows([0.5, 0.02, 0.01, 0.3]), "head_impact", ["A", "B"])
    rate = curve_figure(rows([0.5, 0.02]), "sink_rate", ["A"]).spec
    assert wide.spec["encoding"]["y"]["scale"] == {"type": "log"}
    assert "2.4 powers of ten" in wide.caption and "log scale" in wide.caption
    assert "scale" not in narrow.spec["encoding"]["y"] and "log" not in narrow.caption
    assert rate["encoding"]["y"]["scale"] == {"domain": [0, 100]}

    same = curve_figure(rows([0.5, 0.2]), "head_impact", ["A", "B"], {"A": "x", "B": "x"})
    assert "strokeDash" not in same.spec["encoding"] and "measured" not in same.inline
    taken = {"A": "as added", "B": "after its norm"}
    apart = curve_figure(rows([0.5, 0.2]), "head_impact", ["A", "B"], taken)
    assert apart.spec["encoding"]["strokeDash"]["field"] == "measured"
    assert apart.inline["measured"] == ["as added", "after its norm"]
    assert "A: as added; B: after its norm" in apart.caption
