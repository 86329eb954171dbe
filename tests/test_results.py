"""The results contract: typed load and dump, one-line errors, render without torch,
sites that ship their results and rebuild byte for byte, and tolerant comparison; for
the current schema (gzip-compressed parts) and a version-3 folder (plain ``.json``)."""

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
from attnreport.output import write_site
from attnreport.results import CURRENT, SCHEMA, SCHEMA_VERSION, dump, load, read_json
from attnreport.results.compare import Tolerance, compare_results
from attnreport.results.layout import MANIFEST, compress, is_results_file
from tests.fixtures.fake_results import fake_study, typed
from tests.fixtures.versions import V3, as_version_3
from tests.html_scan import link_problems, scan

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def results():
    return typed(fake_study(3, n_layers=3, n_heads=2, n_tokens=6))


@pytest.fixture
def folder(tmp_path, results) -> Path:
    return write_site(dump(results), tmp_path / "results")


@pytest.fixture
def v3_folder(tmp_path, results) -> Path:
    return write_site(as_version_3(dump(results)), tmp_path / "v3")


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
    layers = range(len(results.sentences[0].attention.scores))
    parts = [f"sentences/{i:03d}/l{layer}.js" for i in range(3) for layer in layers]
    assert sorted(manifest["files"]) == sorted(
        [CURRENT.set, CURRENT.interventions, *(CURRENT.sentence(i) for i in range(3)), *parts]
    )
    assert CURRENT.set == "set.json.gz" and CURRENT.sentence(7) == "sentences/007.json.gz"
    assert read_json(folder / CURRENT.set)["schema"] == SCHEMA


def test_parts_are_gzip_without_a_name_or_time(results):
    """Level 6 (zlib's default), no file name, mtime 0: the same JSON gives the same bytes
    with one zlib."""
    data = dump(results)[CURRENT.set]
    assert data[:4] == b"\x1f\x8b\x08\x00"  # gzip magic, deflate, no FNAME flag
    assert data[4:8] == b"\x00\x00\x00\x00" and data[8] == 0  # mtime 0, default level
    assert data == dump(results)[CURRENT.set]


def test_a_version_3_folder_loads_and_dumps_as_version_4(results, v3_folder):
    assert sorted(p.name for p in v3_folder.iterdir()) == [
        "interventions.json", "manifest.json", "sentences", "set.json"
    ]  # fmt: skip
    old = load(v3_folder)
    assert dump(old) == dump(results)
    assert compare_results(old, results).ok


def test_runs_that_took_update_sizes_on_either_side_of_a_post_attention_norm_differ(results):
    """A schema-8 run of a model with a post-attention norm measured its update sizes after
    the norm, an older run before it: compare says so in one line, not as number noise."""
    from attnreport.results.layers import LayerFacts

    def with_norm(after: bool):
        facts = tuple(LayerFacts(i, post_norm=after) for i in range(3))
        model = replace(results.manifest.model, layers=facts)
        return replace(results, manifest=replace(results.manifest, model=model))

    assert compare_results(with_norm(True), with_norm(True)).ok
    found = compare_results(with_norm(False), with_norm(True))
    assert found.problems[0].startswith("manifest.json: one run took the update sizes after")
    assert found.problems[-1].endswith("nothing else compared")


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
    path = folder / CURRENT.sentence(1)
    data = read_json(path)
    newer = SCHEMA_VERSION + 1
    data["schema"] = f"attnreport.results/{newer}"
    path.write_bytes(compress(json.dumps(data).encode()))
    (folder / "manifest.json").write_text(
        (folder / "manifest.json").read_text().replace(SCHEMA, f"attnreport.results/{newer}")
    )
    message = error_of(folder)
    assert f"version {newer}" in message and "versions 1 and 2" in message and "upgrade" in message
    assert "4" in message.split("reads versions")[1]


@pytest.mark.parametrize("layout", [CURRENT, V3], ids=["v4", "v3"])
def test_truncated_file_is_named(folder, v3_folder, layout):
    path = (folder if layout is CURRENT else v3_folder) / layout.set
    path.write_bytes(path.read_bytes()[:100])
    message = error_of(path.parent)
    assert f"{layout.set} is truncated or was changed: 100 bytes" in message


def replace_part(folder: Path, name: str, data: bytes) -> None:
    """Write ``data`` as results file ``name`` and list its new size in the manifest, as
    if it had been written so: only its content is wrong."""
    (folder / name).write_bytes(data)
    manifest = json.loads((folder / MANIFEST).read_bytes())
    manifest["files"][name] = len(data)
    (folder / MANIFEST).write_text(json.dumps(manifest))


@pytest.mark.parametrize(
    ("cut", "fragment"),
    [
        (lambda data: data[: len(data) // 2], "is truncated or not valid gzip-compressed JSON"),
        (lambda data: data[:-4] + b"\0\0\0\0", "is truncated or not valid gzip-compressed JSON"),
        (lambda data: b"{" + data, "is truncated or not valid gzip-compressed JSON"),
        (lambda data: compress(b'{"schema": '), "is truncated or not valid JSON"),
    ],
    ids=["cut", "length", "not-gzip", "bad-json"],
)
def test_damaged_gzip_or_json_inside_is_one_line_naming_the_file(folder, tmp_path, cut, fragment):
    name = CURRENT.sentence(1)
    replace_part(folder, name, cut((folder / name).read_bytes()))
    message = error_of(folder)
    assert message.startswith(f"{folder}/{name} {fragment}")
    args = ["render", str(folder), "--out", str(tmp_path / "s"), "--no-images"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1 and result.output.count("\n") == 1
    assert f"{name} {fragment}" in result.output


def test_truncated_manifest_is_named(folder):
    path = folder / "manifest.json"
    path.write_bytes(path.read_bytes()[:50])
    assert "manifest.json is truncated" in error_of(folder)


@pytest.mark.parametrize("layout", [CURRENT, V3], ids=["v4", "v3"])
def test_interrupted_analyze_is_detected(folder, v3_folder, layout):
    folder = folder if layout is CURRENT else v3_folder
    (folder / layout.sentence(2)).unlink()
    message = error_of(folder)
    assert "incomplete" in message and f"{layout.sentence(2)} is missing" in message
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


@pytest.mark.parametrize("layout", [CURRENT, V3], ids=["v4", "v3"])
def test_site_ships_its_results_and_renders_again_byte_for_byte(
    folder, v3_folder, tmp_path, layout
):
    folder = folder if layout is CURRENT else v3_folder
    first = tmp_path / "first"
    render([str(folder), "--out", str(first), "--no-images", "--title", "A <b> title"])
    files = tree(first)
    shipped = {n[len("results/") :] for n in files if n.startswith("results/")}
    assert shipped == {*tree(folder), "render.json"}
    for name, data in tree(folder).items():
        assert is_results_file(name) and files["results/" + name] == data  # verbatim
    pages = {n: b.decode() for n, b in files.items() if n.endswith(".html")}
    for name, html in pages.items():
        assert html.count('class="data"') == html.count('class="ar-chart"'), name
        assert not link_problems(name, scan(html), files), name
    sentence = next(html for name, html in pages.items() if name.startswith("s001-"))
    link = f'href="results/{layout.sentence(1)}"'
    assert link in sentence and f"draws, {layout.format})" in sentence
    assert ("gunzip" in sentence) is layout.compressed  # the link's title says how to read it
    again = tmp_path / "again"
    render([str(first / "results"), "--out", str(again)])
    assert tree(again) == files
    render([str(first / "results"), "--out", str(first)])  # into the site that holds them
    assert tree(first) == files


def test_render_refuses_bad_results_in_one_line(folder, tmp_path):
    (folder / CURRENT.set).write_text("{")
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
    assert not outcome.ok and outcome.problems[0].startswith("sentences/000 top.p_top1: ")


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


def test_compare_command_exit_codes(folder, v3_folder, tmp_path, results):
    assert CliRunner().invoke(main, ["compare", str(folder), str(folder)]).exit_code == 0
    assert CliRunner().invoke(main, ["compare", str(v3_folder), str(folder)]).exit_code == 0
    moved = with_top(results, 0, p_top1=results.sentences[0].tables.top.p_top1 * 1.5)
    other = write_site(dump(moved), tmp_path / "other")
    result = CliRunner().invoke(main, ["compare", str(folder), str(other)])
    assert result.exit_code == 1 and "top.p_top1" in result.output


def test_schema_doc_lists_the_typed_tables_columns():
    from attnreport.results import types
    from tests.test_analyses import schema_columns

    for file, kinds in (
        ("sentences/NNN.json.gz", types.table_kinds(types.SentenceTables)),
        ("set.json.gz", types.table_kinds(types.SetResults)),
    ):
        documented = schema_columns(file)
        assert list(documented) == list(kinds)
        for name, kind in kinds.items():
            assert documented[name] == list(kind.columns_of()), name


def test_a_set_fraction_of_a_sentence_without_a_file_may_move_by_one_query(results):
    """Another CPU can flip one query's top key at a near-tie; for a sentence without a
    results file no tie data is kept, so its per-sentence fractions may move by one query
    (as a near-tie, reported), never by two, and a kept sentence's only at a known tie."""
    some = replace(results, sentences=results.sentences[:2])  # sentence 2 keeps no file
    table = some.set.focus_by_sentence

    def moved(sentence: int, queries: int):
        row = int(np.flatnonzero((table.sentence == sentence) & (table.n_queries > 2))[0])
        value = table.self_focus.copy()
        value[row] += queries / table.n_queries[row] * (1 if value[row] < 0.5 else -1)
        changed = replace(table, self_focus=value)
        return compare_results(some, replace(some, set=replace(some.set, focus_by_sentence=changed)))  # fmt: skip

    one = moved(2, 1)
    assert one.ok, one.problems
    assert any("focus_by_sentence.self_focus" in line for line in one.near_ties)
    assert not moved(2, 2).ok  # two queries: not one near-tie
    assert not moved(0, 1).ok  # a kept sentence: only where its tie data shows a tie


def test_the_other_bos_capture_may_move_by_one_query_in_any_sentence(results):
    """The capture in the other BOS condition keeps no scores in any results file, so no
    near-tie of it is known, even for a sentence with a file (whose ties are the other
    capture's): its first focus may move by one query (reported), never by two."""
    from attnreport.results.tables import BosContrastTable

    rows = 2  # sentence 0, which keeps its file: layer 0, heads 0 and 1
    table = BosContrastTable(
        sentence=np.zeros(rows, dtype=np.int64),
        layer=np.zeros(rows, dtype=np.int64),
        head=np.arange(rows, dtype=np.int64),
        first_focus=np.array([0.4, 0.6]),
        n_queries=np.array([5, 5], dtype=np.int64),
        first_prob=np.array([0.3, 0.5]),
        n_first=np.array([5, 5], dtype=np.int64),
        bos=np.array([True, True]),
    )
    base = replace(results, set=replace(results.set, bos_contrast=table))

    def moved(queries: int):
        value = table.first_focus + np.array([queries / 5, 0.0])
        changed = replace(table, first_focus=value)
        return compare_results(base, replace(base, set=replace(base.set, bos_contrast=changed)))

    one = moved(1)
    assert one.ok, one.problems
    assert any("bos_contrast.first_focus" in line for line in one.near_ties)
    assert not moved(2).ok
