"""The page reads a sentence's map parts (schema 10) as Python's ``load`` does: the same
numbers, value for value, loaded by a ``<script>`` tag from ``file://``."""

from __future__ import annotations

import json

import pytest

from attnreport.charts.export.embed import runtime_js
from attnreport.results import as_results, dump
from attnreport.results.map_parts import read_part_text
from tests.fixtures.fake_results import fake_study

pytestmark = pytest.mark.browser

READ = """(ident) => new Promise((resolve) => {
    window.attnreport.data.loadFile("results/", ident, (columns, error) => {
        if (error) { resolve(error); return; }
        const out = {};
        for (const name of Object.keys(columns)) out[name] = window.attnreport.decodeColumn(columns[name]);
        resolve(JSON.stringify(out));
    });
})"""


def test_the_page_decodes_a_part_to_the_numbers_python_reads(offline_page, tmp_path):
    results = as_results(fake_study(1, n_layers=2, n_heads=3, n_tokens=40, seed=4))
    files = dump(results)
    parts = sorted(name for name in files if name.endswith(".js"))
    assert parts == ["sentences/000/l0.js", "sentences/000/l1.js"]
    for name in parts:
        path = tmp_path / "results" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(files[name])
    (tmp_path / "runtime.js").write_text(runtime_js(), encoding="utf-8")
    page_file = tmp_path / "page.html"
    page_file.write_text('<!doctype html><script src="runtime.js"></script>', encoding="utf-8")
    page = offline_page.page
    page.goto(page_file.as_uri())
    for name in parts:
        ident, expected = read_part_text(files[name], name)
        got = json.loads(page.evaluate(READ, ident))
        assert got.keys() == expected.keys()
        for column, values in expected.items():
            assert got[column] == values, (name, column)  # JSON floats: the shortest repr, exact
        assert len(expected["score"]) == 3 * 40 * 41 // 2
    assert offline_page.errors == [] and offline_page.blocked == []
