"""The results contract: typed load and dump, one-line errors, render without torch,
sites that ship their results and rebuild byte for byte, and tolerant comparison."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from attnreport.cli import main
from attnreport.errors import AttnReportError
from attnreport.results import SCHEMA, dump, load
from attnreport.results.compare import Tolerance, compare_results
from attnreport.site.write import write_site
from tests.fixtures.fake_results import fake_study, typed
from tests.html_scan import link_problems, scan

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def results():
    return typed(fake_study(3, n_layers=3, n_heads=2, n_tokens=6))


@pytest.fixture
def folder(tmp_path, results) -> Path:
    return write_site(dump(results), tmp_path / "results")


def tree(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def test_dump_load_dump_is_byte_identical(results, folder):
    files = dump(results)
    assert tree(folder) == files
    assert dump(load(folder)) == files
    manifest = json.loads(files["manifest.json"])
    assert manifest["schema"] == SCHEMA
    assert manifest["files"] == {n: len(b) for n, b in files.items() if n != "manifest.json"}


def test_typed_fields_and_defaults_of_optional_columns(results):
    focus = results.sentences[0].tables.focus
    assert focus.layer.dtype == np.int64 and focus.first_focus.dtype == np.float64
    assert (focus.first_prob == 0).all() and (focus.sink_share == 0).all()  # absent in v1
    assert results.manifest.model.features == () and results.manifest.settings.bos == "auto"
    assert results.sentences[2].n_tokens == 8 == len(results.sentences[2].tokens)


def error_of(folder: Path) -> str:
    with pytest.raises(AttnReportError) as info:
        load(folder)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_missing_folder_and_not_a_results_folder(tmp_path):
    assert "does not exist" in error_of(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    assert "not a results folder" in error_of(tmp_path / "empty")


def test_newer_schema_names_the_versions_understood(folder):
    path = folder / "sentences" / "001.json"
    data = json.loads(path.read_text())
    data["schema"] = "attnreport.results/9"
    path.write_text(json.dumps(data))
    (folder / "manifest.json").write_text(
        (folder / "manifest.json").read_text().replace(SCHEMA, "attnreport.results/9")
    )
    message = error_of(folder)
    assert "version 9" in message and "versions 1 and 2" in message and "upgrade" in message


def test_truncated_file_is_named(folder):
    path = folder / "set.json"
    path.write_bytes(path.read_bytes()[:100])
    message = error_of(folder)
    assert "set.json" in message and "truncated" in message


def test_truncated_manifest_is_named(folder):
    path = folder / "manifest.json"
    path.write_bytes(path.read_bytes()[:50])
    assert "manifest.json is truncated" in error_of(folder)


def test_interrupted_analyze_is_detected(folder):
    (folder / "sentences" / "002.json").unlink()
    message = error_of(folder)
    assert "incomplete" in message and "sentences/002.json" in message
    (folder / "manifest.json").unlink()
    assert "interrupted" in error_of(folder)


def test_render_imports_neither_torch_nor_transformers(folder, tmp_path):
    site = tmp_path / "site"
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from attnreport.cli import main\n"
        f"r = CliRunner().invoke(main, ['render', {str(folder)!r}, '--out', {str(site)!r}, "
        "'--no-images'])\n"
        "assert r.exit_code == 0, r.output\n"
        "print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
    assert (site / "index.html").is_file()


def render(args: list[str]) -> None:
    result = CliRunner().invoke(main, ["render", *args])
    assert result.exit_code == 0, result.output


def test_site_ships_its_results_and_renders_again_byte_for_byte(folder, tmp_path):
    first = tmp_path / "first"
    render([str(folder), "--out", str(first), "--no-images", "--title", "A <b> title"])
    files = tree(first)
    for name, data in tree(folder).items():
        if name.endswith(".json"):
            assert files["results/" + name] == data
    pages = {n: b.decode() for n, b in files.items() if n.endswith(".html")}
    for name, html in pages.items():
        assert html.count('class="data"') == html.count('class="ar-chart"'), name
        assert not link_problems(name, scan(html), files), name
    again = tmp_path / "again"
    render([str(first / "results"), "--out", str(again)])
    assert tree(again) == files
    render([str(first / "results"), "--out", str(first)])  # into the site that holds them
    assert tree(first) == files


def test_render_refuses_bad_results_in_one_line(folder, tmp_path):
    (folder / "set.json").write_text("{")
    result = CliRunner().invoke(main, ["render", str(folder), "--out", str(tmp_path / "s")])
    assert result.exit_code == 1
    assert result.output.startswith("error: ") and result.output.count("\n") == 1
    assert not (tmp_path / "s").exists()


def with_top(results, s: int, **columns):
    sentence = results.sentences[s]
    top = replace(sentence.tables.top, **columns)
    changed = replace(sentence, tables=replace(sentence.tables, top=top))
    return replace(
        results, sentences=tuple(changed if i == s else x for i, x in enumerate(results.sentences))
    )


def test_compare_agrees_with_itself_and_within_tolerance(results):
    assert compare_results(results, results).ok
    top = results.sentences[0].tables.top
    nudged = with_top(results, 0, p_top1=top.p_top1 * (1 + 1e-5))
    assert compare_results(results, nudged, Tolerance(rtol=1e-4)).ok
    moved = with_top(results, 0, p_top1=top.p_top1 * 1.01)
    outcome = compare_results(results, moved, Tolerance(rtol=1e-4))
    assert not outcome.ok and "top.p_top1" in outcome.problems[0]


def test_compare_reports_a_changed_top_key_only_at_a_near_tie(results):
    top = results.sentences[1].tables.top
    row = int(np.flatnonzero(top.query > 0)[0])
    flipped = top.top_key.copy()
    flipped[row] = (flipped[row] + 1) % (int(top.query[row]) + 1)
    changed = with_top(results, 1, top_key=flipped)
    strict = compare_results(results, changed)
    assert not strict.ok and "top.top_key" in strict.problems[0]
    p1 = top.p_top1.copy()
    p2 = top.p_top2.copy()
    p2[row] = p1[row] * (1 - 1e-6)  # the top two tie within the tolerance
    tied_base = with_top(results, 1, p_top2=p2)
    tied_changed = with_top(results, 1, p_top2=p2, top_key=flipped)
    outcome = compare_results(tied_base, tied_changed)
    assert outcome.ok, outcome.problems
    assert any("top.top_key" in line for line in outcome.near_ties)


def test_compare_command_exit_codes(folder, tmp_path, results):
    assert CliRunner().invoke(main, ["compare", str(folder), str(folder)]).exit_code == 0
    moved = with_top(results, 0, p_top1=results.sentences[0].tables.top.p_top1 * 1.5)
    other = write_site(dump(moved), tmp_path / "other")
    result = CliRunner().invoke(main, ["compare", str(folder), str(other)])
    assert result.exit_code == 1 and "top.p_top1" in result.output


def test_schema_doc_lists_the_typed_tables_columns():
    from attnreport.results import types
    from tests.test_analyses import schema_columns

    for file, kinds in (
        ("sentences/NNN.json", types._SENTENCE_TABLES),
        ("set.json", types._SET_TABLES),
    ):
        documented = schema_columns(file)
        assert list(documented) == list(kinds)
        for name, kind in kinds.items():
            assert documented[name] == list(kind.columns_of()), name
