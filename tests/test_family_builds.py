"""Every supported family builds a complete site end to end (tiny models, no images)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from attnreport.cli import main


def test_every_family_builds_a_site(tmp_path, tiny_model_dir):
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
