"""Image export: the cache (keys, damaged entries, atomic writes) and the parallel export."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from dataclasses import replace

import pytest

from attnreport.charts import index_figures, sentence_figures
from attnreport.charts.export import image_cache, image_export, images
from attnreport.charts.export.image_cache import ImageCache, canonical_json, default_cache
from tests.fixtures.fake_results import fake_manifest, fake_sentence, fake_set, fake_study, typed


def fake_render(spec, png=True):
    """Stand-in for vl-convert: bytes that depend only on the spec, like the real export."""
    digest = hashlib.sha256(canonical_json(spec)).hexdigest()
    return f"<svg>{digest}</svg>".encode(), b"\x89PNG\r\n\x1a\n" + digest.encode() if png else b""


@pytest.fixture
def drawn(monkeypatch):
    """Specs the (fake) exporter was asked to draw, in order."""
    calls = []

    def counting(spec, png=True):
        calls.append(spec)
        return fake_render(spec, png)

    monkeypatch.setattr(images, "render_static", counting)
    return calls


def study_pages(study):
    """page name -> figures, as a site build makes them (interventions on sentence 0)."""
    results = typed(study)
    sentences, manifest = results.sentences, results.manifest
    pages = {
        f"s{i}": sentence_figures(s, results.interventions if i == 0 else None, manifest, sentences)
        for i, s in enumerate(sentences)
    }
    pages["index"] = index_figures(results.set, manifest, sentences)
    return pages


@pytest.fixture(scope="module")
def study():
    return fake_study()


@pytest.fixture(scope="module")
def pages(study):
    return study_pages(study)


@pytest.fixture(scope="module")
def changed_pages(study):
    """The pages after the first token of sentence 1 changed (set and manifest recomputed)."""
    sentences = list(study["sentences"])
    tokens = sentences[1]["tokens"]["columns"]["token"]
    sentences[1] = fake_sentence(1, n_tokens=len(tokens), tokens=["Changed", *tokens[1:]])
    changed = {
        **study,
        "sentences": sentences,
        "manifest": fake_manifest(sentences, n_layers=4, n_heads=3),
        "set": fake_set(sentences),
    }
    return study_pages(changed)


def export_pages(pages, cache):
    return {
        name: image_export.figure_images(figs, cache=cache, workers=1)
        for name, figs in pages.items()
    }


def test_entries_round_trip_and_damaged_ones_read_as_missing(tmp_path):
    cache = ImageCache(tmp_path)
    cache.put("ab" * 32, b"<svg/>", b"\x89PNG")
    assert cache.get("ab" * 32) == (b"<svg/>", b"\x89PNG")
    path = cache.path("ab" * 32)
    whole = path.read_bytes()
    for damaged in (whole[:-1], whole + b"x", whole.replace(b"<svg/>", b"<svg!>"), b"", b"junk"):
        path.write_bytes(damaged)
        assert cache.get("ab" * 32) is None
    assert cache.get("cd" * 32) is None


def test_unchanged_figures_are_not_drawn_again(tmp_path, drawn, pages):
    first = export_pages(pages, ImageCache(tmp_path))
    unique = {
        canonical_json(f.static_spec) for figs in pages.values() for f in figs if f.static_spec
    }
    assert len(drawn) == len(unique) > 10  # a spec shared by two figures is drawn once
    drawn.clear()
    again = export_pages(pages, ImageCache(tmp_path))
    assert drawn == []
    assert again == first
    assert all(im == {"svg": fake_render(f.static_spec)[0], "png": fake_render(f.static_spec)[1]}
               for name, figs in pages.items() for f, im in zip(figs, first[name], strict=True))  # fmt: skip


def test_changing_one_sentence_redraws_only_the_figures_that_show_it(
    tmp_path, drawn, pages, changed_pages
):
    export_pages(pages, ImageCache(tmp_path))
    drawn.clear()
    export_pages(changed_pages, ImageCache(tmp_path))
    old = {canonical_json(f.static_spec) for figs in pages.values() for f in figs}
    redrawn = {canonical_json(spec) for spec in drawn}
    new = {
        (name, f.key)
        for name, figs in changed_pages.items()
        for f in figs
        if canonical_json(f.static_spec) not in old
    }
    assert len(redrawn) == len(drawn) == len(new)  # each changed spec drawn once, no other
    # Sentence 1's page and the mean grids (over sentences 0-2) on the intervention page
    # show sentence 1's tokens; sentence 2's page and the pooled set figures do not.
    assert {name for name, _ in new} == {"s1", "s0"}
    assert {key for name, key in new if name == "s0"} == {"mean-grid", "mean-grid-before-rotation"}
    assert len(drawn) < sum(len(figs) for figs in changed_pages.values()) / 2


def test_a_damaged_entry_is_drawn_again_and_rewritten(tmp_path, drawn, pages):
    figs = pages["s1"][:3]
    cache = ImageCache(tmp_path)
    first = image_export.figure_images(figs, cache=cache, workers=1)
    entries = sorted(tmp_path.rglob("*.bin"))
    assert len(entries) == 3
    entries[0].write_bytes(entries[0].read_bytes()[:50])  # a truncated write
    drawn.clear()
    assert image_export.figure_images(figs, cache=cache, workers=1) == first
    assert len(drawn) == 1
    assert all(cache.get(p.stem) for p in entries)


def test_a_new_exporter_version_draws_everything_again(tmp_path, drawn, monkeypatch, pages):
    figs = pages["s1"]
    image_export.figure_images(figs, cache=ImageCache(tmp_path), workers=1)
    count = len(drawn)
    monkeypatch.setattr(images, "POSTPROCESS_VERSION", images.POSTPROCESS_VERSION + 1)
    image_export.figure_images(figs, cache=ImageCache(tmp_path), workers=1)
    assert len(drawn) == 2 * count


def test_a_failed_write_leaves_no_partial_entry(tmp_path, monkeypatch):
    cache = ImageCache(tmp_path)

    def no_rename(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(image_cache.os, "replace", no_rename)
    cache.put("ef" * 32, b"<svg/>", b"png")  # logs, does not raise
    assert cache.get("ef" * 32) is None
    assert list(tmp_path.rglob("*")) == [tmp_path / "ef"]  # no temporary file left behind


def test_cache_lives_in_the_user_cache_folder(tmp_path, monkeypatch):
    from attnreport.models import loading

    monkeypatch.setenv("ATTNREPORT_CACHE", str(tmp_path))
    assert default_cache().root == loading.cache_dir() / "images" == tmp_path / "images"


def test_figures_without_a_static_image_get_none(tmp_path, drawn, pages):
    fig = pages["s1"][0]
    rows = [{"query": 0}] * (images.MAX_ROWS + 1)
    big = replace(fig, static_spec={**fig.static_spec, "data": {"values": rows}})
    none = replace(fig, static_spec=None)
    out = image_export.figure_images([big, none, fig], cache=ImageCache(tmp_path), workers=1)
    assert out[:2] == [{}, {}]
    assert out[2]["svg"] == fake_render(fig.static_spec)[0]
    assert len(drawn) == 1


def test_svg_only_export_draws_no_png_and_is_cached_apart(tmp_path, drawn, pages):
    figs = pages["s1"]
    svg_only = image_export.figure_images(figs, png=False, cache=ImageCache(tmp_path), workers=1)
    assert [im for im in svg_only if im] and all(set(im) == {"svg"} for im in svg_only if im)
    assert [im["svg"] for im in svg_only] == [fake_render(f.static_spec)[0] for f in figs]
    count = len(drawn)
    # An SVG-only entry cannot stand in for a figure that wants its PNG, and back.
    both = image_export.figure_images(figs, png=True, cache=ImageCache(tmp_path), workers=1)
    assert all(set(im) == {"svg", "png"} for im in both) and len(drawn) == 2 * count
    again = image_export.figure_images(figs, png=False, cache=ImageCache(tmp_path), workers=1)
    assert again == svg_only and len(drawn) == 2 * count


def test_started_export_draws_in_the_workers_before_its_result_is_asked(drawn, monkeypatch, pages):
    """``start_images`` hands the drawings to the pool at once (the build makes the next
    page meanwhile); ``result`` only collects them."""
    submitted = []

    class Pool:
        def submit(self, fn, spec, png):
            submitted.append(spec)
            done = image_export.cf.Future()
            done.set_result(fn(spec, png))
            return done

    monkeypatch.setattr(image_export, "_executor", lambda workers: Pool())
    figs = pages["s1"]
    export = image_export.start_images(figs, png=False, cache=False, workers=2)
    assert len(submitted) == len(drawn) == len({canonical_json(f.static_spec) for f in figs})
    assert [im["svg"] for im in export.result()] == [fake_render(f.static_spec)[0] for f in figs]
    assert len(drawn) == len(submitted)  # nothing drawn a second time here


def test_a_worker_that_dies_mid_page_leaves_its_figures_to_be_drawn_here(drawn, monkeypatch, pages):
    class Pool:
        def submit(self, fn, spec, png):
            broken = image_export.cf.Future()
            broken.set_exception(image_export.cf.BrokenExecutor("a worker died"))
            return broken

    monkeypatch.setattr(image_export, "_executor", lambda workers: Pool())
    figs = pages["s1"]
    out = image_export.start_images(figs, cache=False, workers=2).result()
    assert [im["png"] for im in out] == [fake_render(f.static_spec)[1] for f in figs]


def test_figures_the_workers_have_not_started_are_drawn_here_from_the_last(
    drawn, monkeypatch, pages
):
    """While this process waits for a page, it takes back the queued figures, last first;
    the ones a worker already runs are waited for, and no figure is drawn twice."""
    futures = []

    class Pool:  # the first figure runs in a worker; the rest wait in its queue
        def submit(self, fn, spec, png):
            future = image_export.cf.Future()
            if not futures:
                future.set_running_or_notify_cancel()
                future.set_result(fn(spec, png))
            futures.append(future)
            return future

    monkeypatch.setattr(image_export, "_executor", lambda workers: Pool())
    figs = pages["s1"]
    export = image_export.start_images(figs, png=False, cache=False, workers=2)
    first, *queued = list(export.specs.values())
    assert drawn == [first] and len(queued) >= 2
    out = export.result()
    assert drawn == [first, *reversed(queued)]
    assert all(f.cancelled() for f in futures[1:])
    assert [im["svg"] for im in out] == [fake_render(f.static_spec)[0] for f in figs]


def test_the_pool_has_one_process_fewer_than_the_drawers(monkeypatch):
    """This process is one of the ``workers`` drawers: it builds the next pages and draws
    what is left, so 2 free cores start one worker process, not two."""
    sizes = []

    class Executor:
        def __init__(self, workers, mp_context):
            sizes.append(workers)

        def shutdown(self, wait, cancel_futures):
            pass

    monkeypatch.setattr(image_export.cf, "ProcessPoolExecutor", Executor)
    monkeypatch.setattr(image_export, "_pool", None)
    monkeypatch.setattr(image_export, "free_cores", lambda: 2)
    monkeypatch.delenv("ATTNREPORT_IMAGE_WORKERS", raising=False)
    assert image_export.worker_count(10) == 2 and image_export.worker_count(2) == 1
    image_export._executor(image_export.worker_count(10))
    assert sizes == [1]
    image_export.shutdown_pool()


def test_free_cores_counts_what_other_processes_keep_busy(monkeypatch):
    ticks = iter([{0: (100, 200), 1: (100, 200)}, {0: (100, 300), 1: (190, 300)}])
    monkeypatch.setattr(image_export, "_cpu_times", lambda cpus: next(ticks))
    monkeypatch.setattr(image_export.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    assert image_export.free_cores(interval=0) == 1  # cpu 0 all busy, cpu 1 idle
    ticks = iter([{0: (0, 100), 1: (0, 100)}, {0: (95, 200), 1: (90, 200)}])
    assert image_export.free_cores(interval=0) == 2


def test_broken_worker_pool_falls_back_to_drawing_here(tmp_path, drawn, monkeypatch, pages):
    def no_pool(workers):
        raise OSError("cannot start processes")

    monkeypatch.setattr(image_export, "_executor", no_pool)
    figs = pages["s1"]
    out = image_export.figure_images(figs, cache=False, workers=2)
    assert [im["png"] for im in out] == [fake_render(f.static_spec)[1] for f in figs]


@pytest.mark.slow
def test_parallel_export_is_byte_identical_to_serial(pages):
    figs = pages["s1"][:6]
    serial = image_export.figure_images(figs, cache=False, workers=1)
    try:
        parallel = image_export.figure_images(figs, cache=False, workers=2)
        image_export.shutdown_pool()
        three = image_export.figure_images(figs, cache=False, workers=3)
    finally:
        image_export.shutdown_pool()
    assert all(im for im in serial)
    assert parallel == serial == three
    assert b"<svg" in serial[0]["svg"] and serial[0]["png"].startswith(b"\x89PNG")


def test_image_export_does_not_import_torch():
    code = (
        "import sys, attnreport.charts.export.image_export, attnreport.site.assemble; "
        "sys.exit('torch' in sys.modules or 'transformers' in sys.modules)"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def test_vega_bundle_is_read_from_the_cache_once_written(tmp_path, monkeypatch):
    import vl_convert

    from attnreport.charts.export import bundle

    monkeypatch.setenv("ATTNREPORT_CACHE", str(tmp_path))
    first = bundle.javascript_bundle()
    assert first == vl_convert.javascript_bundle()

    def boom():
        raise AssertionError("a cached bundle must not be drawn again")

    monkeypatch.setattr(vl_convert, "javascript_bundle", boom)
    assert bundle.javascript_bundle() == first
    (entry,) = (tmp_path / "vega").rglob("*.bin")
    entry.write_bytes(entry.read_bytes()[:100])
    with pytest.raises(AssertionError, match="must not be drawn"):
        bundle.javascript_bundle()  # a damaged entry is not used
