"""Static images do not depend on the fonts installed on the machine (``charts.fonts``).

Each export runs in a fresh interpreter (vl-convert builds its font database once per
process) with fontconfig pointed at a folder holding one real system font, or at an empty
one: two machines with different fonts. The chart names that font first, as ours name
``system-ui``/``Arial`` first, and its y labels are long, so their measured width moves
the axis title.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from attnreport.charts.export.svg import compact_svg
from tests.patience import patience

# (family, file) of fonts a Debian machine with Chromium usually has.
SYSTEM_FONTS = [
    ("DejaVu Sans", "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"),
    ("Liberation Serif", "/usr/share/fonts/truetype/liberation/LiberationSerif-Regular.ttf"),
]

EXPORT = """
import json, os, sys
import vl_convert
from attnreport.charts.export import images
spec = json.loads(sys.argv[1])
if sys.argv[2] == "ours":
    svg = images.render_static(spec, False)[0].decode()
else:
    svg = vl_convert.vegalite_to_svg(spec, vl_version=images.VL_VERSION)
print(json.dumps({"svg": svg, "FONTCONFIG_FILE": os.environ.get("FONTCONFIG_FILE")}))
"""


def _spec(family: str) -> dict:
    labels = ["a token with a long label", "another quite long label", "short"]
    return {
        "$schema": "https://vega.github.io/schema/vega-lite/v6.json",
        "config": {"font": f"{family}, sans-serif"},
        "title": "Where the heads look",
        "data": {"values": [{"y": y, "x": i} for i, y in enumerate(labels)]},
        "mark": "bar",
        "encoding": {"y": {"field": "y", "type": "nominal"}, "x": {"field": "x"}},
    }


def _machine(tmp_path: Path, name: str, font: str | None) -> Path:
    """A fontconfig file whose only font folder holds ``font`` (or nothing)."""
    folder = tmp_path / name
    folder.mkdir()
    if font:
        shutil.copy(font, folder)
    config = folder / "fonts.conf"
    config.write_text(f'<?xml version="1.0"?>\n<fontconfig><dir>{folder}</dir></fontconfig>\n')
    return config


def _export(spec: dict, config: Path, how: str) -> dict:
    env = {**os.environ, "FONTCONFIG_FILE": str(config)}
    done = subprocess.run(
        [sys.executable, "-c", EXPORT, json.dumps(spec), how],
        env=env,
        capture_output=True,
        text=True,
        timeout=patience(120),
        check=True,
    )
    return json.loads(done.stdout)


@pytest.fixture
def system_font():
    for family, path in SYSTEM_FONTS:
        if Path(path).is_file():
            return family, path
    pytest.skip("no known system font installed")


def test_svg_is_the_same_whatever_fonts_the_machine_has(tmp_path, system_font):
    family, path = system_font
    spec = _spec(family)
    with_font = _machine(tmp_path, "with-font", path)
    without = _machine(tmp_path, "without", None)
    # The two machines really measure differently when vl-convert is left alone...
    plain = [_export(spec, config, "plain")["svg"] for config in (with_font, without)]
    assert plain[0] != plain[1]
    # ...and our export gives the same bytes on both, measuring with vl-convert's font
    # (then compacted: images.render_static).
    ours = [_export(spec, config, "ours") for config in (with_font, without)]
    assert ours[0]["svg"] == ours[1]["svg"] == compact_svg(plain[1].encode()).decode()
    # The user's fontconfig setting is restored once the font database is built.
    assert ours[0]["FONTCONFIG_FILE"] == str(with_font)
