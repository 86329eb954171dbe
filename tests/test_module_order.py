"""The order xdist starts the test modules in: measured seconds first, marks otherwise."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from tests import module_seconds
from tests.conftest import longest_modules_first

ROOT = Path(__file__).resolve().parent.parent


def _item(nodeid: str, *marks: str) -> SimpleNamespace:
    markers = [SimpleNamespace(name=m) for m in marks]
    return SimpleNamespace(nodeid=nodeid, iter_markers=lambda: iter(markers))


def test_every_measured_module_exists():
    missing = [name for name in module_seconds.measured() if not (ROOT / name).is_file()]
    assert not missing, f"renamed or removed: {missing}; run python -m tests.module_seconds"


def test_measured_seconds_outrank_marks_and_each_module_keeps_its_order(monkeypatch):
    measured = {"tests/test_long.py": 150.0, "tests/test_short.py": 2.0}
    monkeypatch.setattr(module_seconds, "measured", lambda: measured)
    items = [
        _item("tests/test_short.py::a", "slow", "slow"),  # 40 s by its marks, 2 measured
        _item("tests/test_new.py::a", "slow"),  # not measured: 20 s by its mark
        _item("tests/test_long.py::a"),
        _item("tests/test_long.py::b"),
    ]
    order = [item.nodeid for item in longest_modules_first(items)]
    assert order == [
        "tests/test_long.py::a",
        "tests/test_long.py::b",
        "tests/test_new.py::a",
        "tests/test_short.py::a",
    ]


def test_a_junit_report_gives_seconds_per_module(tmp_path):
    report = tmp_path / "run.xml"
    report.write_text(
        '<testsuites><testsuite name="pytest">'
        '<testcase classname="tests.test_a" name="x" time="1.04"/>'
        '<testcase classname="tests.test_a.TestGroup" name="y" time="2.0"/>'
        '<testcase classname="tests.test_b" name="z" time="7.5"/>'
        "</testsuite></testsuites>"
    )
    assert module_seconds.from_junit(report) == {"tests/test_b.py": 7.5, "tests/test_a.py": 3.0}
    assert list(module_seconds.from_junit(report)) == ["tests/test_b.py", "tests/test_a.py"]


@pytest.mark.parametrize("name", ["tests/test_bench.py", "tests/test_corpus_ray.py"])
def test_the_longest_modules_are_measured(name):
    assert name in module_seconds.measured()


def test_a_module_the_run_left_out_keeps_its_seconds():
    """A run of ``make test``'s tier lacks modules it leaves out whole; they keep theirs."""
    before = {"tests/test_install.py": 136.6, "tests/test_a.py": 3.0}
    run = {"tests/test_b.py": 7.5, "tests/test_a.py": 4.0}
    merged = module_seconds.merged(run, before)
    assert merged == {"tests/test_install.py": 136.6, "tests/test_b.py": 7.5, "tests/test_a.py": 4.0}  # fmt: skip
    assert list(merged) == ["tests/test_install.py", "tests/test_b.py", "tests/test_a.py"]
