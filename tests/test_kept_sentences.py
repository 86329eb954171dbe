"""``--pages`` at analysis: only the sentences with a page (and the scaling grid's drawn
input) keep a results file of their own; every sentence still counts in the set tables,
and the mean grid's inputs are named by its own file.

One 12-sentence corpus on a tiny model is analysed twice, with every page and with
``--pages 0,5`` (interventions on sentence 10, the mean grid on 1 and 10), and the two
folders are compared file by file.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from attnreport.cli import main
from attnreport.corpus.store import RunStore, partial_name
from attnreport.page_choice import kept_indices
from attnreport.results import load, read_json
from attnreport.results.compare import compare_results
from tests.test_corpus_run import write_corpus

COUNT = 12
KEPT = [0, 5, 10]  # the pages 0 and 5 and the scaling grid's 10 (the mean grid's 1 needs none)


def cli(*args: str):
    return CliRunner().invoke(main, list(args))


@pytest.fixture(scope="module")
def runs(tmp_path_factory, tiny_model_dirs) -> dict[str, Path]:
    """Results folders of one corpus: "all" (every page) and "some" (``--pages 0,5``)."""
    root = tmp_path_factory.mktemp("kept")
    write_corpus(root / "corpus.txt", COUNT, seed=5)
    (root / "attnreport.toml").write_text(
        f'model = "{tiny_model_dirs["llama"]}"\nsentences = "corpus.txt"\n'
        'date = "2026-01-02"\nimages = false\nscaling_sentence = 10\nmean_sentences = [1, 10]\n'
    )
    out = {}
    for name, pages in (("all", "all"), ("some", "0,5")):
        out[name] = root / name
        args = ["analyze", "--config", str(root / "attnreport.toml"), "--out", str(out[name])]
        result = cli(*args, "--pages", pages)
        assert result.exit_code == 0, result.output
    return out


def sentence_files(folder: Path) -> list[str]:
    """The sentence files (not the folders of their map parts)."""
    return sorted(p.name for p in (folder / "sentences").iterdir() if p.is_file())


def test_only_the_kept_sentences_have_a_results_file(runs):
    assert kept_indices("0,5", COUNT, 10) == tuple(KEPT)
    assert sentence_files(runs["some"]) == [f"{i:03d}.json.gz" for i in KEPT]
    assert len(sentence_files(runs["all"])) == COUNT
    manifest = json.loads((runs["some"] / "manifest.json").read_text())
    assert sorted(n for n in manifest["files"] if n.endswith(".json.gz") and "/" in n) == [
        f"sentences/{i:03d}.json.gz" for i in KEPT
    ]
    parts = {n.split("/")[1] for n in manifest["files"] if n.endswith(".js")}
    assert parts == {f"{i:03d}" for i in KEPT}  # only the kept sentences keep maps
    assert manifest["settings"]["pages"] == "0,5" and len(manifest["sentences"]) == COUNT


def test_the_set_tables_and_kept_sentences_are_those_of_the_full_run(runs):
    """The set tables rest on every sentence whether its file is kept or not."""
    for name in ("set.json.gz", "interventions.json.gz"):
        assert read_json(runs["some"] / name) == read_json(runs["all"] / name)
    focus = read_json(runs["some"] / "set.json.gz")["tables"]["focus_by_sentence"]["columns"]
    assert set(load(runs["some"]).set.focus_by_sentence.arrays()["sentence"]) == set(range(COUNT))
    assert focus  # the per-sentence rows of all 12 sentences, as the full run's
    for i in KEPT:
        name = f"sentences/{i:03d}.json.gz"
        assert read_json(runs["some"] / name) == read_json(runs["all"] / name)


def test_load_gives_the_kept_sentences_and_the_set_size(runs):
    results = load(runs["some"])
    assert len(results.sentences) == COUNT
    assert [s.index for s in results.sentences] == KEPT
    assert results.sentences[5].index == 5
    assert (
        1 not in KEPT
        and len(results.interventions.mean.tokens[1]) == results.manifest.sentences[1].n_tokens
    )
    with pytest.raises(LookupError, match="sentence 3 is not loaded"):
        results.sentences[3]


def test_compare_compares_the_kept_sentences_and_names_another_choice(runs, tmp_path):
    assert compare_results(load(runs["some"]), load(runs["some"])).ok
    other = compare_results(load(runs["all"]), load(runs["some"]))
    assert not other.ok
    assert any("different sentences (pages)" in p for p in other.problems)


def test_render_gives_pages_to_kept_sentences_only(runs, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no attnreport.toml here to take options from
    result = cli("render", str(runs["some"]), "--out", str(tmp_path / "site"))
    assert result.exit_code == 0, result.output
    pages = sorted(p.name[:4] for p in (tmp_path / "site").glob("s0*.html"))
    assert pages == [f"s{i:03d}" for i in KEPT]
    refused = cli("render", str(runs["some"]), "--out", str(tmp_path / "x"), "--pages", "3-4")
    assert refused.exit_code == 1
    lines = refused.output.strip().splitlines()
    assert len(lines) == 1 and "sentence 3 has no page data in these results" in lines[0]
    assert "pages = '0,5'" in lines[0] and not (tmp_path / "x").exists()


def test_a_sentence_without_a_file_is_finished_once_its_partial_is_written(runs, tmp_path):
    """Resuming: a kept sentence needs its file and its partial, another its partial."""
    folder = tmp_path / "run"
    (folder / "partials").mkdir(parents=True)
    (folder / "sentences").mkdir()
    for i in (0, 3):
        (folder / partial_name(i)).write_text("{}")
    store = RunStore(folder, frozenset(KEPT))
    assert store._finished() == {3}  # 0 is kept and has no file yet
    (folder / "sentences" / "000.json.gz").write_bytes(b"")
    assert store._finished() == {0, 3}


def test_the_mean_grid_names_the_tokens_of_an_input_without_a_file(runs):
    """Sentence 1 is a mean-grid input with no file of its own in "some": its grid rows
    are labelled with its tokens from ``interventions.json``, as the full run's file gives
    them, so the figure is the same chart in both runs."""
    import attnreport

    specs = {}
    for name in ("all", "some"):
        study = attnreport.load(runs[name])
        assert "mean-grid" in study.figures(10)
        specs[name] = study.figure("mean-grid", 10).to_dict()
    text = json.dumps(specs["some"])
    tokens = load(runs["all"]).sentences[1].tokens.token
    assert all(json.dumps(str(t))[1:-1] in text for t in tokens[:3])
    assert specs["some"] == specs["all"]


def test_a_sentence_without_a_page_is_analysed_without_its_maps(tiny_model_dirs, monkeypatch):
    """A sentence whose results file is not kept adds the same sums to the set tables as
    one that is, and its maps are never made (rounding and ranking them is a third of the
    dense path's analysis time): ``attention_triangles`` is not called for it."""
    from attnreport import sentence_pass
    from attnreport.config import Settings
    from attnreport.corpus.work import analyze_one
    from attnreport.sentences import Sentence
    from attnreport.session import Session, open_session

    session = open_session(str(tiny_model_dirs["llama"]), None)
    tokenizer = session.loaded.tokenizer
    ids = tokenizer("the cat sat on the mat and the dog sat on the cat").input_ids
    sentence = Sentence(0, tokenizer.decode(ids), tuple(ids), tuple(map(tokenizer.decode, ids)))
    one = Session(session.loaded, session.specs, [sentence], session.bos)
    kept = analyze_one(one, sentence, Settings(), keep=True)
    assert kept.data is not None

    def no_maps(*args, **kwargs):
        raise AssertionError("a sentence without a page made its maps")

    monkeypatch.setattr(sentence_pass, "attention_triangles", no_maps)
    unkept = analyze_one(one, sentence, Settings(), keep=False)
    assert unkept.data is None
    assert unkept.partial.to_json() == kept.partial.to_json()
