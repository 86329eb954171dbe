"""Issue 28's budgets in the bench's weight section: the long input's default-model
estimate, file by file, and the targets it judges."""

from __future__ import annotations

import pytest

from benchmarks.weight import (
    LONG_BUDGET_MB,
    LONG_FILE_BUDGET_MB,
    MB,
    NEWCOMER_BUDGET_MB,
    NEWCOMER_SENT_BUDGET_MB,
    _targets,
    default_model_estimate,
    growth_factors,
    sent_bytes,
    site_weight,
)


def test_growth_factors_are_the_head_ratios():
    factors = growth_factors()
    assert factors["heads"] == pytest.approx(270 / 12)  # 30 x 9 heads against 4 x 3
    assert factors["layer_heads"] == pytest.approx(3.0)  # 9 heads a layer against 3


def test_default_model_estimate_scales_each_part(tmp_path):
    files = {
        "results/sentences/000.json.gz": 1000,
        "results/interventions.json.gz": 500,
        "data/s000/attention-breakdown/a.js": 200,
        "data/s000/mean-grid/mean-grid--same.js": 40,
        "s000-long.html": 100,
        "assets/vega.js": 300,
    }
    for name, size in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x" * size)
    got = default_model_estimate(tmp_path)
    expected = (1000 + 200) * 270 / 12 + (500 + 40 + 100) * 3 + 300
    assert got["total"] == pytest.approx(expected)
    assert got["largest"][0] == "results/sentences/000.json.gz"
    assert got["largest"][1] == pytest.approx(1000 * 270 / 12)


def test_sent_bytes_compress_all_but_compressed_files(tmp_path):
    import gzip

    (tmp_path / "site" / "results").mkdir(parents=True)
    text = b"attention " * 1000
    (tmp_path / "site" / "index.html").write_bytes(text)
    (tmp_path / "site" / "results" / "set.json.gz").write_bytes(gzip.compress(text))
    weight = site_weight(tmp_path / "site")
    packed = len(gzip.compress(text, 6, mtime=0))
    assert weight["sent"] == packed + len(gzip.compress(text))
    assert sent_bytes(tmp_path / "site" / "index.html") == packed < weight["total"]


def test_every_budget_is_judged_including_the_estimate():
    weights = {
        "newcomer's project": {"total": 13 * MB, "sent": 4 * MB, "largest": ("a", 1 * MB)},
        "long": {"total": 20 * MB, "largest": ("b", 11 * MB)},
        "estimate": {"total": 24 * MB, "largest": ("c", 9 * MB)},
    }
    targets = {t.what: t for t in _targets(weights, "long", judged=True)}
    assert targets["Newcomer's project site"].met is False
    assert targets["Newcomer's project, sent gzip-compressed"].met is True
    assert targets["long site (tiny model)"].met is True
    assert targets["long, largest file (tiny model)"].met is False
    assert targets["long site (default model, extrapolated)"].met is True
    assert targets["long, largest file (default model, extrapolated)"].met is True
    limits = {t.limit for t in targets.values()}
    assert {f"<= {NEWCOMER_BUDGET_MB:g} MB", f"<= {LONG_BUDGET_MB:g} MB"} <= limits
    assert f"<= {NEWCOMER_SENT_BUDGET_MB:g} MB" in limits
    assert (NEWCOMER_BUDGET_MB, NEWCOMER_SENT_BUDGET_MB) == (12.0, 5.0)  # issue 42
    assert f"<= {LONG_FILE_BUDGET_MB:g} MB" in limits
