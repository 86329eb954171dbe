"""No test's verdict depends on how fast a busy machine runs it (issue 43): the property
tests have no per-example deadline, whichever module they are in, and draw the same
examples on every run."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import settings


def test_property_tests_have_no_deadline():
    """The suite's Hypothesis profile (tests/conftest.py) sets none, and no test module
    sets one of its own: a 200 ms deadline failed a codec test on a loaded machine."""
    assert settings().deadline is None and settings().derandomize
    set_here = re.compile(r"deadline\s*=\s*(?!None\b)[\w.(]")
    found = [
        f"{path.name}: @settings({call.group(1)})"
        for path in sorted(Path(__file__).parent.glob("test_*.py"))
        for call in re.finditer(r"@settings\((.*?)\)\s*\n", path.read_text("utf-8"), re.S)
        if set_here.search(call.group(1))
    ]
    assert found == []
