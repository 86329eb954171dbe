"""One copy of every map (issue 42, schema 10): a sentence's scores live in part files
``sentences/NNN/lL.js`` that ``load`` reads and the page draws from.

The expected numbers are computed here, independently: the scores the analysis had
(the fake study's, at 6 significant digits) rounded by Python's ``round`` to the stored
places; the ranks the analysis had, compared with those read back."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from attnreport.charts.export.embed import decode_columns
from attnreport.errors import AttnReportError
from attnreport.results import SCHEMA, as_results, dump, load
from attnreport.results.compare import compare_results
from attnreport.results.io import parse_files
from attnreport.results.layout import MANIFEST, decode
from attnreport.results.map_parts import read_part_text
from attnreport.results.rounding import SCORE_PLACES
from attnreport.site import SiteOptions, assemble_site, write_site
from attnreport.site.real_charts import default_charts
from attnreport.site.source import from_folder
from tests.fixtures.fake_results import fake_study
from tests.fixtures.versions import as_version_9, as_version_10

OPTIONS = SiteOptions(title="Parts", date="2026-11-27", authors=("Ada",), images=False)


@pytest.fixture(scope="module")
def study():
    return as_results(fake_study(2, n_layers=3, n_heads=2, n_tokens=9))


@pytest.fixture(scope="module")
def files(study):
    return dump(study)


def test_a_dumped_sentence_loads_back_its_scores_at_the_stored_precision(study, files):
    back = parse_files(files)
    for before, after in zip(study.sentences, back.sentences, strict=True):
        a, b = before.attention, after.attention
        assert a.layer_numbers == b.layer_numbers
        for heads_a, heads_b in zip(a.scores, b.scores, strict=True):
            for tri_a, tri_b in zip(heads_a, heads_b, strict=True):
                for row_a, row_b in zip(tri_a, tri_b, strict=True):
                    for x, y in zip(row_a, row_b, strict=True):
                        assert y == round(x, SCORE_PLACES)
                        assert abs(y - x) <= 0.5 * 10**-SCORE_PLACES + 1e-12
        assert b.ranks == a.ranks  # the analysis' key order, through the rounding
        for name in ("top", "breakdown", "head_impact", "focus"):
            assert getattr(after.tables, name).to_json() == getattr(before.tables, name).to_json()


def test_the_sentence_file_keeps_no_scores_and_lists_its_parts(files):
    head = json.loads(decode(files["sentences/000.json.gz"], "sentences/000.json.gz", ""))
    assert head["schema"] == SCHEMA
    assert "scores" not in head["attention"]
    names = [part["file"] for part in head["attention"]["parts"]]
    assert names == [f"sentences/000/l{layer}.js" for layer in range(3)]
    listed = json.loads(files["manifest.json"])["files"]
    for part, name in zip(head["attention"]["parts"], names, strict=True):
        assert listed[name] == len(files[name])
        assert part["sha256"] == hashlib.sha256(files[name]).hexdigest()
        ident, columns = read_part_text(files[name], name)
        assert ident == name.removesuffix(".js")
        assert set(columns) == {"layer", "head", "query", "key", "score"}
        assert files[name].startswith(b'window.attnreport.register("sentences/000/l')


def test_a_changed_or_missing_part_is_refused_by_name(files):
    broken = dict(files)
    broken["sentences/000/l1.js"] = files["sentences/000/l1.js"][:-20]
    with pytest.raises(AttnReportError, match="sentences/000/l1.js"):
        parse_files(broken, "r/")
    same_size = dict(files)  # a byte changed: the manifest's sizes cannot tell
    data = bytearray(files["sentences/001/l0.js"])
    data[-10] = ord("A") if data[-10] != ord("A") else ord("B")
    same_size["sentences/001/l0.js"] = bytes(data)
    with pytest.raises(AttnReportError, match="sentences/001/l0.js was changed"):
        parse_files(same_size, "r/")
    missing = {k: v for k, v in files.items() if k != "sentences/001/l2.js"}
    with pytest.raises(AttnReportError, match="sentences/001/l2.js is missing"):
        parse_files(missing, "r/")


def map_payloads(site: Path) -> list[tuple[Path, dict]]:
    """(page, attention-map payload) of every sentence page of ``site``."""
    out = []
    for page in sorted(site.rglob("s0*.html")):
        text = page.read_text(encoding="utf-8")
        marker = 'id="ar-data-attention-map">'
        if marker in text:
            start = text.index(marker) + len(marker)
            out.append((page, json.loads(text[start : text.index("</script>", start)])))
    return out


def test_a_rendered_site_holds_each_map_once(study, tmp_path):
    site = tmp_path / "site"
    write_site(assemble_site(study, OPTIONS, default_charts()), site)
    pages = map_payloads(site)
    assert len(pages) == 2
    for page, payload in pages:
        assert payload["results_chunks"] is True and payload["inline"] == {}
        assert 'data-chunks="results/"' in page.read_text(encoding="utf-8")
        for ident in payload["chunks"].values():
            assert (page.parent / "results" / f"{ident}.js").is_file()
    assert not list(site.rglob("data/*/attention-map"))
    # no data file of the site holds a map's rows (a query row of more keys than the
    # breakdown's ranks): only the results' parts do
    for path in site.rglob("data/**/*.js"):
        if path.name.endswith("--phone.js"):
            continue  # a phone's spec, not rows
        text = path.read_text(encoding="utf-8")
        columns = decode_columns(json.loads(text[text.index(", ") + 2 : -len(");\n")]))
        if {"layer", "head", "query", "key", "score"} <= set(columns):
            rows = zip(columns["layer"], columns["head"], columns["query"], strict=True)
            assert max(Counter(rows).values()) <= 3, path


def test_a_folder_of_schema_9_renders_with_the_maps_in_the_pages_data_files(study, tmp_path):
    folder = tmp_path / "nine"
    for name, data in as_version_9(dump(study)).items():
        folder.joinpath(*name.split("/")).parent.mkdir(parents=True, exist_ok=True)
        folder.joinpath(*name.split("/")).write_bytes(data)
    nine = load(folder)
    assert all(s.parts is None for s in nine.sentences)
    assert compare_results(study, nine).ok
    site = tmp_path / "site"
    write_site(assemble_site(from_folder(folder), OPTIONS, default_charts()), site)
    pages = map_payloads(site)
    assert len(pages) == 2 and all("results_chunks" not in p for _, p in pages)
    assert len(list(site.rglob("data/*/attention-map"))) == 2
    assert not list(site.rglob("results/sentences/*/*.js"))


def test_a_folder_of_schema_10_loads_its_whole_row_rank_fixes_as_the_fixed_keys(study, tmp_path):
    """Schema 10 wrote each rank fix as its row's every rank; schema 11 keeps the keys the
    written scores rank otherwise. Both give the same maps, and a dump of the old one
    writes the fixed keys only."""
    files = dump(study)
    current = parse_files(files)
    assert any(s.attention.rank_fixes for s in current.sentences)  # the case is not vacuous
    ten = as_version_10(files)
    assert json.loads(ten[MANIFEST])["schema"] == "attnreport.results/10"
    back = parse_files(ten)
    assert compare_results(current, back).ok
    for a, b in zip(current.sentences, back.sentences, strict=True):
        assert b.attention.rank_fixes == a.attention.rank_fixes
        assert b.attention.ranks == a.attention.ranks
    assert dump(back) == files


def test_the_maps_tooltip_shows_the_stored_digits():
    """The score is shown with the stored places and the probability with no more."""
    from attnreport.charts.figures.attention import PROB_FORMAT, _map_tooltips

    formats = {t.to_dict()["field"]: t.to_dict().get("format") for t in _map_tooltips()}
    assert formats["score"] == f".{SCORE_PLACES}f"
    assert f".{SCORE_PLACES}f" == PROB_FORMAT


def test_every_shown_score_digit_is_the_analysis_own(study, files):
    """The map's tooltip writes each part's score with its format: digit for digit the
    analysis' score (the fake study's 6-digit values, standing for the float32 ones)
    written so, and each derived probability within one unit of its last shown digit."""
    from attnreport.charts.figures.attention import _map_tooltips

    shown = next(t.to_dict()["format"] for t in _map_tooltips() if t.to_dict()["field"] == "score")
    back = parse_files(files)
    for before, after in zip(study.sentences, back.sentences, strict=True):
        a, b = before.attention, after.attention
        for entry in range(len(a.scores)):
            for head in range(len(a.scores[entry])):
                exact = np.concatenate(a.scores[entry][head])
                stored_scores = np.concatenate(b.scores[entry][head])
                assert [f"{v:{shown}}" for v in stored_scores] == [f"{v:{shown}}" for v in exact]
                p_exact = np.concatenate(a.probs[entry][head])
                p_shown = np.concatenate(b.probs[entry][head])
                assert np.abs(p_exact - p_shown).max() <= 10**-SCORE_PLACES


def test_the_example_holds_each_map_once():
    """The committed example (schema 10): every sentence page's map draws from its model's
    results parts, and no page has data files of the map's own."""
    example = Path(__file__).resolve().parent.parent / "site"
    pages = map_payloads(example)
    assert len(pages) == 6
    for page, payload in pages:
        assert payload["results_chunks"] is True and payload["inline"] == {}
        for ident in payload["chunks"].values():
            assert (page.parent / "results" / f"{ident}.js").is_file()
    assert not list(example.rglob("data/*/attention-map"))
