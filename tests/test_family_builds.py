"""Every supported family builds a complete site end to end (tiny models, no images)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from attnreport.cli import main
from tests.tiers import extended
from tests.tiny_models import FAMILY_NAMES

# Every change builds the sites of four families, one of each way to give positions:
# rotary with grouped KV heads (llama), learned absolute positions through a fused QKV
# (gpt2), ALiBi (bloom), and a sliding window with QK norms and a BOS (gemma3). Every
# family's capture and tables are checked on every change (test_capture, test_blockwise);
# what a build adds, the pages, is drawn from those tables whatever the family.
LANDING = ("llama", "gpt2", "bloom", "gemma3")
COVERED = extended(
    "tests/test_capture.py::test_three_checks_hold",
    "tests/test_blockwise.py::test_blockwise_tables_equal_dense_tables_on_every_tiny_family",
    *(f"tests/test_family_builds.py::test_every_family_builds_a_site[{f}]" for f in LANDING),
)
FAMILIES = [f if f in LANDING else pytest.param(f, marks=COVERED) for f in FAMILY_NAMES]


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_builds_a_site(tmp_path, tiny_model_dirs, family):
    tiny_model_dir = tiny_model_dirs[family]
    sentences = tmp_path / "s.txt"
    sentences.write_text(
        "the cat chased the mouse and the dog sat on the mat\nwhat does attention focus ?\n"
    )
    out = tmp_path / "site"
    args = [
        "build",
        "--model",
        str(tiny_model_dir),
        "--sentences",
        str(sentences),
        "--out",
        str(out),
        "--no-images",
    ]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    pages = sorted(out.glob("s00*.html"))
    assert len(pages) == 2
    first = pages[0].read_text(encoding="utf-8")
    for key in (
        "attention-map",
        "attention-breakdown",
        "scaling-grid",
        "mean-grid",
        "impact-by-position",
    ):
        assert f'data-key="{key}"' in first, key
    for chunk in out.rglob("*.js"):
        if chunk.parent.name != "assets":
            assert "NaN" not in chunk.read_text(encoding="utf-8"), chunk
    payloads = first.split('type="application/json"')[1:]
    for payload in payloads:
        json.loads(payload.split(">", 1)[1].split("</script>", 1)[0])
