"""The figure and image caches stay under their size limit: least recently used entries
go first, a read counts as a use, the models and anything else stay."""

from __future__ import annotations

import logging
import os
import time

import pytest

from attnreport import usercache
from attnreport.charts.export.image_cache import ImageCache
from attnreport.output import write_site
from attnreport.publish import render_folder
from attnreport.results import CURRENT, dump
from attnreport.site.context import SiteOptions
from tests.fixtures.fake_results import fake_study, typed

MB = 1024 * 1024


def entry(cache: ImageCache, key: str, size: int, age_s: float) -> None:
    """An entry of about ``size`` bytes last used ``age_s`` seconds ago."""
    cache.put(key, b"x" * size, b"")
    stamp = time.time() - age_s
    os.utime(cache.path(key), (stamp, stamp))


def keys_left(cache: ImageCache, keys: list[str]) -> list[str]:
    return [key for key in keys if cache.path(key).exists()]


def test_prune_removes_the_least_recently_used_down_to_its_share(tmp_path):
    figures, images = ImageCache(tmp_path / "figures"), ImageCache(tmp_path / "images")
    keys = [f"{i:02x}" * 32 for i in range(10)]
    for i, key in enumerate(keys):  # key 0 the oldest; figures and images alternate
        entry(figures if i % 2 else images, key, 100_000, age_s=1000 - i)
    model = tmp_path / "models" / "ab" / ("ab" * 32 + ".bin")
    model.parent.mkdir(parents=True)
    model.write_bytes(b"m" * 600_000)
    os.utime(model, (0, 0))  # the oldest file of all: models are not pruned
    sizes = {k: (figures if i % 2 else images).path(k).stat().st_size for i, k in enumerate(keys)}
    limit = 500_000  # 10 entries of about 100 kB: over it; PRUNE_TO leaves at most 400 kB
    freed = usercache.prune(tmp_path, limit)
    left = [k for k in keys if (figures.path(k).exists() or images.path(k).exists())]
    assert left == keys[-3:]  # the three most recent (3 x ~100 kB <= 400 kB < 4 x)
    assert freed == sum(sizes[k] for k in keys[:-3])
    assert model.exists()
    assert usercache.prune(tmp_path, limit) == 0  # under the limit now: nothing to do


def test_reading_an_entry_makes_it_recent(tmp_path):
    cache = ImageCache(tmp_path / "images")
    old, new = "aa" * 32, "bb" * 32
    entry(cache, old, 100_000, age_s=5000)
    entry(cache, new, 100_000, age_s=10)
    assert cache.get(old) == (b"x" * 100_000, b"")  # a use: now the most recent
    usercache.prune(tmp_path, 150_000)
    assert keys_left(cache, [old, new]) == [old]


def test_under_the_limit_nothing_goes_and_stale_temporary_files_do(tmp_path):
    cache = ImageCache(tmp_path / "figures")
    entry(cache, "cc" * 32, 1000, age_s=10 * 24 * 3600)
    folder = cache.path("cc" * 32).parent
    stale, fresh = folder / ".tmp-dead", folder / ".tmp-writing"
    stale.write_bytes(b"half")
    fresh.write_bytes(b"half")
    os.utime(stale, (0, 0))
    other = folder / "notes.txt"  # not an entry: never touched
    other.write_text("mine")
    os.utime(other, (0, 0))
    assert usercache.prune(tmp_path, 10 * MB) == 4
    assert cache.path("cc" * 32).exists() and fresh.exists() and other.exists()
    assert not stale.exists()


def test_the_limit_comes_from_the_environment(monkeypatch, caplog):
    monkeypatch.setenv("ATTNREPORT_CACHE_LIMIT_MB", "12")
    assert usercache.limit_bytes() == 12 * MB
    monkeypatch.delenv("ATTNREPORT_CACHE_LIMIT_MB")
    assert usercache.limit_bytes() == usercache.DEFAULT_LIMIT_MB * MB
    monkeypatch.setenv("ATTNREPORT_CACHE_LIMIT_MB", "lots")
    with caplog.at_level(logging.WARNING):
        assert usercache.limit_bytes() == usercache.DEFAULT_LIMIT_MB * MB
    assert "ATTNREPORT_CACHE_LIMIT_MB='lots' is not a whole number" in caplog.text


@pytest.mark.slow
def test_a_render_prunes_the_caches_it_filled(tmp_path, monkeypatch):
    results = write_site(dump(typed(fake_study(2, n_layers=2, n_heads=2))), tmp_path / "results")
    monkeypatch.setenv("ATTNREPORT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("ATTNREPORT_IMAGE_WORKERS", "1")
    options = SiteOptions(png=False)
    render_folder(results, tmp_path / "a", options)
    filled = sum(f.stat().st_size for f in (tmp_path / "cache").rglob("*.bin"))
    assert filled > 0
    monkeypatch.setenv("ATTNREPORT_CACHE_LIMIT_MB", "0")
    render_folder(results, tmp_path / "b", options)  # everything read back, then pruned
    assert not list((tmp_path / "cache" / "figures").rglob("*.bin"))
    assert not list((tmp_path / "cache" / "images").rglob("*.bin"))
    render_folder(results, tmp_path / "c", options)  # an empty cache: made again, same site
    for name in ("index.html", "results/" + CURRENT.set):
        assert (tmp_path / "c" / name).read_bytes() == (tmp_path / "a" / name).read_bytes()
