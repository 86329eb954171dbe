"""The figure cache: an unchanged render builds no figure, a changed sentence rebuilds only
the figures that read it, damaged entries are rebuilt; the site's bytes never depend on it."""

from __future__ import annotations

from dataclasses import replace

import pytest

from attnreport.charts import registry
from attnreport.charts.export import figure_cache
from attnreport.results import CURRENT, dump
from attnreport.site import SiteOptions, assemble_site, default_charts
from tests.fixtures.fake_results import fake_manifest, fake_sentence, fake_set, fake_study, typed

OPTIONS = SiteOptions(images=False)


@pytest.fixture
def cache_home(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNREPORT_CACHE", str(tmp_path))
    return tmp_path


@pytest.fixture
def built(monkeypatch):
    """(figure key, page sentence or None) of every figure the cache had to build."""
    calls: list[tuple[str, int | None]] = []
    original = registry.place

    def counting(entry, inputs):
        page = None if inputs.page_sentence is None else inputs.page_sentence.index
        calls.append((entry.key, page))
        return original(entry, inputs)

    monkeypatch.setattr(figure_cache, "place", counting)
    return calls


@pytest.fixture(scope="module")
def study():
    return fake_study()


def site(results, cache=True):
    return dict(assemble_site(results, OPTIONS, default_charts(cache=cache)))


def placed_on(results):
    """(figure key, page) -> registry entry of every figure the site draws."""
    out = {}
    for index in (None, *range(len(results.sentences))):
        for p in registry.build_figures(registry.page_inputs(results, index)):
            out[(p.entry.key, index)] = p.entry
    return out


def test_an_unchanged_render_builds_no_figure_and_gives_the_same_bytes(cache_home, built, study):
    results = typed(study)
    plain = site(results, cache=False)
    first = site(results)
    assert sorted(built) == sorted(placed_on(results))
    built.clear()
    again = site(results)
    assert built == []
    assert first == plain and again == plain
    assert len(list((cache_home / "figures").rglob("*.bin"))) == len(placed_on(results))


def test_changing_one_sentence_rebuilds_only_the_figures_that_read_it(cache_home, built, study):
    before = typed(study)
    site(before)
    sentences = list(study["sentences"])
    tokens = sentences[1]["tokens"]["columns"]["token"]
    sentences[1] = fake_sentence(1, n_tokens=len(tokens), tokens=["Changed", *tokens[1:]], seed=7)
    changed = {
        **study,
        "sentences": sentences,
        "manifest": fake_manifest(sentences, n_layers=4, n_heads=3),
        "set": fake_set(sentences),
    }
    results = typed(changed)
    assert 1 in results.interventions.mean.sentences  # the grids read sentence 1
    built.clear()
    after = site(results)
    # Sentence 1's page, the figures that read the interventions (they name their inputs'
    # tokens) and, if the set file changed, the set-wide index figures; nothing else.
    set_changed = dump(before)[CURRENT.set] != dump(results)[CURRENT.set]
    assert set_changed  # new numbers in sentence 1 change the pooled ones
    expected = {
        (key, page)
        for (key, page), entry in placed_on(results).items()
        if page == 1 or entry.source == "interventions" or (page is None and set_changed)
    }
    assert set(built) == expected
    assert not any(page in (0, 2) and key == "attention-map" for key, page in built)
    assert after == site(results, cache=False)


def test_a_damaged_or_unreadable_entry_is_built_again_and_rewritten(cache_home, built, study):
    results = typed(study)
    first = site(results)
    entries = sorted((cache_home / "figures").rglob("*.bin"))
    entries[0].write_bytes(entries[0].read_bytes()[:40])  # a truncated write
    store = figure_cache.default_cache()
    store._store.put(entries[1].stem, b"not a pickle", b"")  # intact entry, bad content
    built.clear()
    assert site(results) == first
    assert len(built) == 2
    assert all(store.get(p.stem) is not None for p in entries)


def test_new_code_rebuilds_every_figure(cache_home, built, study, monkeypatch):
    results = typed(study)
    site(results)
    monkeypatch.setattr(figure_cache, "code_version", lambda: "another version")
    built.clear()
    site(results)
    assert sorted(built) == sorted(placed_on(results))


def test_entries_hold_no_rows(cache_home, study):
    results = typed(study)
    site(results)
    store = figure_cache.default_cache()
    for path in (cache_home / "figures").rglob("*.bin"):
        figure, encoded = store.get(path.stem)
        assert figure.inline == {} and figure.chunks == {}
        assert encoded.payload.startswith("{")
        assert replace(figure, inline={}) == figure
