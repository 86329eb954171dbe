"""The About rows: a checksum a reader can recompute with sha256sum, settings, the command."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import replace

import pytest

from attnreport.results import dump
from attnreport.site import SiteOptions, assemble_site
from attnreport.site.about import (
    CHECK_COMMAND,
    about_rows,
    rebuild_command,
    results_checksum,
    settings_text,
)
from tests.fixtures.fake_results import fake_study, typed
from tests.site_helpers import demo_charts


@pytest.mark.skipif(shutil.which("sha256sum") is None, reason="needs coreutils sha256sum")
def test_checksum_matches_the_shell_line_on_the_written_folder(tmp_path):
    files = dump(typed(fake_study(3)))
    for path, content in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_bytes(content)
    out = subprocess.run(
        CHECK_COMMAND, shell=True, cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert results_checksum(files) == "sha256:" + out.stdout.split()[0]


def test_checksum_changes_with_any_byte_and_ignores_other_files():
    files = dump(typed(fake_study(2)))
    base = results_checksum(files)
    assert base.startswith("sha256:") and len(base) == 7 + 64
    assert results_checksum({**files, ".attnreport-site": b"x"}) == base
    changed = dict(files, **{"set.json": files["set.json"].replace(b"0", b"1", 1)})
    assert results_checksum(changed) != base


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
