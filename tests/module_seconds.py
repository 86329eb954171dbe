"""Seconds each test module took in a measured run, for the order xdist starts them in.

``tests/conftest.py`` starts the modules longest first, so that the long ones (the quick
bench, the Ray module, the install tests: one to three minutes each) start at once and
no worker is left with one of them at the end. It reads their cost from
``module_seconds.json``; a module missing there (a new one) is estimated from its
tests' marks. After a change that moves a module's time by much, measure again:

    python -m pytest -q -n 3 --dist loadfile --no-loadscope-reorder -m "not extended" --junitxml=run.xml
    python -m tests.module_seconds run.xml      # rewrites tests/module_seconds.json

(``make test``'s tier: the order is for the run every change makes. A module that tier
leaves out whole, such as the fresh venv's install, keeps the seconds it had.)

Only the order depends on these numbers; no test reads them.
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

FILE = Path(__file__).with_suffix(".json")


def measured() -> dict[str, float]:
    """Module path (``tests/test_x.py``) -> seconds (empty when the file is missing)."""
    if not FILE.is_file():
        return {}
    return json.loads(FILE.read_text(encoding="utf-8"))


def from_junit(path: Path) -> dict[str, float]:
    """Seconds per module in a ``--junitxml`` report (setup, call and teardown of each
    test), longest first, rounded to a tenth."""
    seconds: Counter[str] = Counter()
    for case in ET.parse(path).getroot().iter("testcase"):
        module = case.get("classname", "").split(".")
        while module and not module[-1].startswith("test_"):
            module.pop()  # a class inside the module
        seconds["/".join(module) + ".py"] += float(case.get("time", 0))
    return {name: round(s, 1) for name, s in seconds.most_common()}


def merged(run: dict[str, float], before: dict[str, float]) -> dict[str, float]:
    """``run``'s seconds, and ``before``'s for modules ``run`` lacks, longest first."""
    seconds = {**{name: s for name, s in before.items() if name not in run}, **run}
    return dict(sorted(seconds.items(), key=lambda item: -item[1]))


if __name__ == "__main__":
    seconds = merged(from_junit(Path(sys.argv[1])), measured())
    FILE.write_text(json.dumps(seconds, indent=1) + "\n", encoding="utf-8")
