"""The About rows: a checksum a reader can recompute with sha256sum, settings, the command."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import replace

import pytest

from attnreport.results import CURRENT, dump
from attnreport.site import SiteOptions, assemble_site
from attnreport.site.about import (
    about_rows,
    check_command,
    rebuild_command,
    results_checksum,
    settings_text,
)
from tests.fixtures.fake_results import fake_study, typed
from tests.fixtures.versions import V3, as_version_3
from tests.site_helpers import demo_charts


@pytest.mark.skipif(shutil.which("sha256sum") is None, reason="needs coreutils sha256sum")
@pytest.mark.parametrize("version", [4, 3])
def test_checksum_matches_the_shell_line_on_the_written_folder(tmp_path, version):
    """A corpus run's folder also holds run.json and partials/, a site's results/ its
    render.json: version 4's line leaves them out (version 3's, kept as it was shown,
    counts any .json)."""
    files = dump(typed(fake_study(3)))
    layout = CURRENT if version == 4 else V3
    files = files if version == 4 else as_version_3(files)
    others = {"run.json": b"{}", "partials/000.json": b"{}", "render.json": b"{}"}
    for path, content in {**files, **(others if version == 4 else {})}.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_bytes(content)
    out = subprocess.run(
        check_command(layout), shell=True, cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert results_checksum(files, layout) == "sha256:" + out.stdout.split()[0]


def test_checksum_changes_with_any_byte_and_ignores_other_files():
    files = dump(typed(fake_study(2)))
    base = results_checksum(files)
    assert base.startswith("sha256:") and len(base) == 7 + 64
    others = {".attnreport-site": b"x", "run.json": b"{}", "partials/000.json": b"{}"}
    assert results_checksum({**files, **others}) == base
    data = files[CURRENT.set]
    changed = dict(files, **{CURRENT.set: data[:-1] + bytes([data[-1] ^ 1])})
    assert results_checksum(changed) != base


def test_a_version_3_folder_keeps_its_checksum_and_line():
    """Plain .json files, hashed and found as before version 4 (its sites render as they did)."""
    files = as_version_3(dump(typed(fake_study(2))))
    assert results_checksum(files, V3) == results_checksum({**files, "x.json.gz": b""}, V3)
    assert check_command(V3) == (
        "find . -name '*.json' -printf '%P\\n' | LC_ALL=C sort | xargs sha256sum | sha256sum"
    )


def test_settings_and_rebuild_command():
    settings = {"epsilons": [0.5, 0.001, 1e-10], "map_tokens": 256, "view_head": None, "x": 0.25}
    assert settings_text(settings) == "epsilons 0.5, 0.001, 1e-10 · map_tokens 256 · x 0.25"
    manifest = typed(fake_study(1)).manifest
    embedded = replace(
        manifest,
        model=replace(manifest.model, source="gguf", name="SmolLM2-135M (Q4_1 GGUF, embedded)"),
        settings=replace(manifest.settings, intervene_layer=20),
    )
    assert rebuild_command(embedded) == "attnreport build --model default --intervene-layer 20"
    hub = replace(
        manifest,
        model=replace(manifest.model, source="hub", name="org/my model"),
        settings=replace(manifest.settings, intervene_layer=None, bos="always"),
    )
    assert rebuild_command(hub) == "attnreport build --model 'org/my model' --bos always"


def test_index_page_has_the_about_section():
    study = typed(fake_study(2))
    rows = dict(about_rows(study.manifest, "9.9", results_checksum(dump(study))))
    assert rows["attnreport"] == "9.9" and rows["Results checksum"] == results_checksum(dump(study))
    assert "Pages" not in rows and "--pages" not in rows["Rebuild with"]
    html = assemble_site(study, SiteOptions(), demo_charts())["index.html"].decode()
    about = html[html.index('<section id="about">') :]
    assert "About this report" in about and rows["Results checksum"] in about
    assert "attnreport build --model" in about


def test_the_epsilons_are_named_for_what_they_are():
    """ε multiplies Q, K or V in the scaling grid: a scale factor, not a focus threshold."""
    from attnreport.site.about import settings_rows

    assert settings_rows({"epsilons": [0.5, 1e-3, 1e-10]}) == (
        ("Intervention scale factors (ε)", "0.5, 0.001, 1e-10"),
    )


def test_a_matched_depth_shows_the_digits_a_reader_can_use():
    """A comparison records the depth it matched as layer / (L - 1): 24 / 29 is not shown
    as 0.827586, but with two significant digits, as the figures' tooltips give it."""
    from attnreport.site.about import settings_rows

    assert settings_rows({"intervene_depth": 24 / 29}) == (
        ("Relative depth of the interventions", "0.83"),
    )
    assert settings_rows({"intervene_depth": 0.5}) == (
        ("Relative depth of the interventions", "0.5"),
    )
