"""The Python API on results (no model): ``load``, ``Study.save``, ``table``, ``figure`` and
``render``, each against what the command line or the results package gives.

The studies are fake results (``tests.fixtures.fake_results``) and the committed example
(``site/results``, two models); what ``render`` writes is compared byte for byte with
``attnreport render`` of the same saved results, and what ``load`` reads with the files.
"""

from __future__ import annotations

import filecmp
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import attnreport
from attnreport.charts.registry import entry_of, page_inputs, place
from attnreport.cli import main
from attnreport.results import dump
from attnreport.results.types import set_tables
from attnreport.vocabulary import MARKER
from tests.fixtures.fake_results import fake_study, typed

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "site" / "results"


@pytest.fixture(scope="module")
def study() -> attnreport.Study:
    return attnreport.Study(dump(typed(fake_study(3, n_layers=4, n_heads=3))))


def same_tree(a: Path, b: Path) -> list[str]:
    """The relative paths whose bytes differ between two folders, or that one lacks."""
    names = {p.relative_to(a).as_posix() for p in a.rglob("*") if p.is_file()}
    names |= {p.relative_to(b).as_posix() for p in b.rglob("*") if p.is_file()}
    return sorted(n for n in names if not ((a / n).is_file() and (b / n).is_file()
                                           and filecmp.cmp(a / n, b / n, shallow=False)))  # fmt: skip


def test_save_writes_the_results_files_and_load_reads_them_back(study, tmp_path):
    folder = study.save(tmp_path / "results")
    written = {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()}  # fmt: skip
    assert written == {**study.files, MARKER: b"attnreport results\n"}
    again = attnreport.load(folder)
    assert isinstance(again, attnreport.Study) and again.files == study.files
    assert repr(again) == "<Study of fake/llama-like: 3 sentences, 4 layers x 3 heads>"  # fmt: skip
    assert again.sentences == tuple(s.text for s in study.results.sentences)


def test_load_of_a_comparison_gives_one_study_per_model_with_its_options():
    studies = attnreport.load(EXAMPLE)
    assert isinstance(studies, list)
    assert [s.results.manifest.model.name for s in studies] == [
        attnreport.load(ROOT / "site" / slug / "results").results.manifest.model.name
        for slug in ("smollm2-135m-instruct", "gemma-3-270m")
    ]
    top = (EXAMPLE / "render.json").read_bytes()
    assert all(s.files["render.json"] == top for s in studies)


def test_load_refuses_what_is_not_results_in_one_line(tmp_path):
    with pytest.raises(attnreport.AttnReportError, match="does not exist"):
        attnreport.load(tmp_path / "nothing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(attnreport.AttnReportError, match="is not a results folder"):
        attnreport.load(tmp_path / "empty")


def test_a_set_table_is_a_dataframe_of_the_schemas_columns(study):
    for name, table in set_tables(study.results.set).items():
        frame = study.table(name)
        assert list(frame.columns) == list(table.columns_of()), name
        for column, values in table.arrays().items():
            assert np.array_equal(frame[column].to_numpy(), values), (name, column)


def test_a_sentence_table_stacks_every_sentence_after_a_sentence_column(study):
    frame = study.table("top")
    parts = [s.tables.top.arrays() for s in study.results.sentences]
    assert list(frame.columns) == ["sentence", *study.results.sentences[0].tables.top.columns_of()]
    assert frame.sentence.tolist() == [i for i, p in enumerate(parts) for _ in p["query"]]
    assert frame.p_top1.tolist() == [v for p in parts for v in p["p_top1"]]
    one = study.table("top", sentence=2)
    assert np.array_equal(one.p_top1.to_numpy(), parts[2]["p_top1"])
    tokens = study.table("tokens", sentence=1)
    assert tokens.token.tolist() == list(study.results.sentences[1].tokens.token)
    assert "focus_pooled" in study.tables() and "focus_pooled" not in study.tables(sentence=0)


def test_unknown_tables_and_sentences_are_one_line_errors(study):
    with pytest.raises(attnreport.AttnReportError, match=r"the set has no table 'nope'; its tables: focus_by_sentence, "):  # fmt: skip
        study.table("nope")
    with pytest.raises(attnreport.AttnReportError, match="sentence 3 does not exist: the study has sentences 0-2"):  # fmt: skip
        study.table("top", sentence=3)


def site_figure(study, name, sentence):
    """The Figure the site builds for ``name`` on ``sentence``'s page (None: the index)."""
    return place(entry_of(name), page_inputs(study.results, sentence)).figure


def test_a_figure_is_the_sites_spec_with_every_views_rows(study):
    chart = study.figure("attention-map", sentence=1, layer=2, head=1)
    spec = chart.to_dict()
    site = site_figure(study, "attention-map", 1)
    params = {p["name"]: p for p in spec["params"]}
    assert (params["layer"]["value"], params["head"]["value"]) == (2, 1)
    assert params["layer"]["bind"] == {p["name"]: p for p in site.spec["params"]}["layer"]["bind"]
    drawn = {k: v for k, v in spec.items() if k not in ("params", "data", "datasets", "usermeta")}
    assert drawn == {k: v for k, v in site.spec.items() if k not in ("params", "data", "usermeta")}
    (rows,) = spec["datasets"].values()
    every = [r for chunk in site.chunks.values() for r in zip(*chunk.values(), strict=True)]
    every += list(zip(*site.inline.values(), strict=True))  # the default view's first rows
    assert sorted(tuple(r.values()) for r in rows) == sorted(every)
    n = study.results.sentences[1].n_tokens
    assert len(rows) == 4 * 3 * n * (n + 1) // 2  # every layer, head and causal pair


def test_one_view_only_fixes_the_controls_that_pick_a_view(study):
    spec = study.figure("attention-map", sentence=0, layer=3, every_view=False).to_dict()
    params = {p["name"]: p for p in spec["params"]}
    assert "bind" not in params["layer"] and "bind" in params["head"]
    (rows,) = spec["datasets"].values()
    n = study.results.sentences[0].n_tokens
    assert {r["layer"] for r in rows} == {3} and len(rows) == 3 * n * (n + 1) // 2


def test_a_chart_validates_against_the_vega_lite_schema(study):
    chart = study.figure("orientation-vs-magnitude", sentence=0, layer=1)
    chart.to_dict(validate=True)  # raises on a spec Vega-Lite does not accept


def test_index_figures_and_grids_open_where_the_site_draws_them(study):
    scaled = study.results.interventions.scaling.sentence
    grid = study.figure("scaling-grid", observation="next", eps=1e-3).to_dict()
    params = {p["name"]: p["value"] for p in grid["params"]}
    assert (params["observation"], params["eps"]) == ("next", 1e-3)
    assert grid["vconcat"] == site_figure(study, "scaling-grid", scaled).spec["vconcat"]
    assert study.figure("set-first-focus").to_dict()["layer"] == site_figure(study, "set-first-focus", None).spec["layer"]  # fmt: skip
    assert "set-first-focus" in study.figures() and "set-first-focus" not in study.figures(0)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda s: s.figure("nope"), "no figure 'nope'; this study's figures: attention-map, "),
        (
            lambda s: s.figure("self-focus", layer=1),
            "self-focus has no layer control; its controls: none",
        ),  # fmt: skip
        (
            lambda s: s.figure("attention-map", layer=4),
            "attention-map: layer must be 0-3 in steps of 1; got 4",
        ),  # fmt: skip
        (
            lambda s: s.figure("scaling-grid", observation="far"),
            "scaling-grid: observation must be one of 'same', 'next', 'last'; got 'far'",
        ),  # fmt: skip
        (
            lambda s: s.figure("set-sink-rate", sentence=0),
            "set-sink-rate is drawn over the whole sentence set: give no sentence",
        ),  # fmt: skip
        (
            lambda s: s.figure("scaling-grid", sentence=2),
            "scaling-grid is not drawn for sentence 2: the intervention grids are drawn for sentence 0",
        ),  # fmt: skip
    ],
)
def test_figure_errors_are_one_line(study, call, message):
    with pytest.raises(attnreport.AttnReportError) as err:
        call(study)
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


def test_the_notebook_renderer_gives_the_vega_lite_bundle_and_the_html(study):
    import altair as alt

    chart = study.figure("set-first-focus")
    with alt.renderers.enable("attnreport"):
        bundle = chart._repr_mimebundle_()
    bundle = bundle[0] if isinstance(bundle, tuple) else bundle
    vegalite = [k for k in bundle if k.startswith("application/vnd.vegalite.v")]
    assert len(vegalite) == 1 and bundle[vegalite[0]] == chart.to_dict()
    assert "vegaEmbed" in bundle["text/html"]


def cli_render(results: Path, out: Path, *flags: str) -> None:
    done = CliRunner().invoke(main, ["render", str(results), "--out", str(out), *flags])
    assert done.exit_code == 0, done.output


def test_render_is_the_cli_render_of_the_saved_results(study, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no attnreport.toml here for the command to pick up
    summary = attnreport.render(study, tmp_path / "api", images=False, title="From Python")
    cli_render(study.save(tmp_path / "saved"), tmp_path / "cli", "--no-images", "--title", "From Python")  # fmt: skip
    assert same_tree(tmp_path / "api", tmp_path / "cli") == []
    assert summary.out == (tmp_path / "api").absolute() and summary.pages == 4
    assert "From Python" in (tmp_path / "api" / "index.html").read_text(encoding="utf-8")


def test_render_of_several_studies_is_the_comparison_site(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    results = typed(fake_study(2, n_layers=2, n_heads=2))
    other = replace(results, manifest=replace(results.manifest, model=replace(results.manifest.model, name="Other model")))  # fmt: skip
    studies = [attnreport.Study(dump(results)), attnreport.Study(dump(other))]
    attnreport.render(studies, tmp_path / "api", images=False)
    for i, s in enumerate(studies):
        s.save(tmp_path / "saved" / str(i))
    done = CliRunner().invoke(main, ["render", str(tmp_path / "saved" / "0"), str(tmp_path / "saved" / "1"), "--out", str(tmp_path / "cli"), "--no-images"])  # fmt: skip
    assert done.exit_code == 0, done.output
    assert same_tree(tmp_path / "api", tmp_path / "cli") == []
    assert (tmp_path / "api" / "results" / "models.json").is_file()


@pytest.mark.slow
def test_render_of_the_loaded_example_is_the_committed_example(
    example_render, example_cache, tmp_path
):
    """``load`` of the example's results (two models, with the options they were drawn
    with) and ``render`` give the site ``attnreport render site/results`` gives (with the
    figures and images that render made: the static exports are most of a render's time,
    and a figure that differs is made anew)."""
    attnreport.render(attnreport.load(EXAMPLE), tmp_path / "site")
    assert same_tree(tmp_path / "site", example_render) == []


def test_render_options_are_checked_as_settings(study, tmp_path):
    with pytest.raises(attnreport.AttnReportError, match=r"^render\(\): unknown key 'titel'; did you mean 'title'\?$"):  # fmt: skip
        attnreport.render(study, tmp_path / "x", titel="X")
    with pytest.raises(attnreport.AttnReportError, match=r"^render\(\): 'map_tokens': it changes the analysis: pass it to analyze\(\)$"):  # fmt: skip
        attnreport.render(study, tmp_path / "x", map_tokens=8)
    with pytest.raises(attnreport.AttnReportError, match=r"^render\(\): 'png_scale' must be more than 0 and at most 8, got 9"):  # fmt: skip
        attnreport.render(study, tmp_path / "x", png_scale=9)
    assert not (tmp_path / "x").exists()


BLOCK_TORCH = """
import sys
class Blocked:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("torch", "transformers"):
            raise ImportError(f"{name} is blocked: this process has no torch")
sys.meta_path.insert(0, Blocked())
"""


def test_load_tables_figures_and_render_run_without_torch(study, tmp_path):
    """In a fresh interpreter where importing torch or transformers fails (as in the
    ``render`` extra's venv, which tests/test_install.py builds for real)."""
    study.save(tmp_path / "results")
    code = BLOCK_TORCH + (
        "import attnreport\n"
        f"s = attnreport.load({str(tmp_path / 'results')!r})\n"
        "print(len(s.table('focus_pooled')), len(s.figure('attention-map').to_dict()['datasets']))\n"
        f"print(attnreport.render(s, {str(tmp_path / 'site')!r}, images=False).pages)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'transformers')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split("\n")[:3] == [f"{len(study.table('focus_pooled'))} 1", "4", "[]"]
