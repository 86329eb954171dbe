"""The suite's two tiers: ``make test`` (every change and CI) and ``make test-all``.

A test marked ``extended`` runs in ``make test-all`` alone. It repeats, at a cost the
landing suite cannot carry on a 2-core machine, a code path that a cheaper test of the
landing suite already runs:

- a real environment made from nothing (the wheel in a fresh venv, a Ray driver killed
  mid-run on a live cluster, the quick bench's twenty processes);
- the same check over more values, widths, models or families than the one the landing
  suite checks (every control of a page where one control's sweep runs every change;
  every tiny family's site where four families' sites are built).

Every ``extended`` mark names the landing tests that run its code path (``covered_by``),
and collection stops when one of them does not exist or is itself extended. What the
extended tier checks alone is then more values and other environments (a fresh venv, a
driver joining a running Ray cluster with ``--ray-address``), not another code path. Mark a test with ``@extended("tests/x.py::test_y")``,
or one parameter with ``pytest.param(v, marks=extended(...))``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from pathlib import Path

import pytest

MARK = "extended"


def extended(*covered_by: str) -> pytest.MarkDecorator:
    """The ``extended`` mark, naming the landing tests (``tests/x.py::test_y``, with a
    parameter id in brackets where one parameter covers it) that run the same path."""
    return getattr(pytest.mark, MARK)(covered_by=covered_by)


def problems(items: Iterable, root: Path) -> list[str]:
    """What is wrong with the ``extended`` marks of the collected ``items`` (pytest items:
    ``nodeid`` and ``get_closest_marker``): a mark without ``covered_by``, a named test that
    no file under ``root`` defines, or one that is collected and extended itself."""
    marks = {item.nodeid: item.get_closest_marker(MARK) for item in items}
    found: list[str] = []
    for test, mark in marks.items():
        if mark is None:
            continue
        covered_by = mark.kwargs.get("covered_by") or ()
        if not covered_by:
            found.append(f"{test}: an extended test names the landing tests that cover it (covered_by)")  # fmt: skip
        for nodeid in covered_by:
            if not defines(root, nodeid):
                found.append(f"{test}: covered_by names {nodeid}, which no test file defines")  # fmt: skip
            elif marks.get(nodeid) is not None:
                found.append(f"{test}: covered_by names {nodeid}, which is extended too")
    return found


def defines(root: Path, nodeid: str) -> bool:
    """True when ``nodeid``'s file (under ``root``) defines its test function."""
    path, _, name = nodeid.partition("::")
    function = name.partition("[")[0]
    text = _text(root / path)
    if not function or text is None:
        return False
    return re.search(rf"^def {re.escape(function)}\(", text, flags=re.MULTILINE) is not None


@functools.cache
def _text(file: Path) -> str | None:
    """A test file's text, read once however many marks name its tests (None: no file)."""
    return file.read_text(encoding="utf-8") if file.is_file() else None
