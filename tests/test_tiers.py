"""The suite's tiers (``tests/tiers.py``): an ``extended`` test names landing tests that
exist and are not extended themselves, or collection stops."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import tiers

ROOT = Path(__file__).resolve().parent.parent
HERE = "tests/test_tiers.py::"


class Item:
    """What ``tiers.problems`` reads of a pytest item."""

    def __init__(self, nodeid: str, *marks) -> None:
        self.nodeid = nodeid
        self.marks = {mark.name: mark for mark in (m.mark for m in marks)}

    def get_closest_marker(self, name: str):
        return self.marks.get(name)


def test_a_landing_test_that_exists_covers_an_extended_one():
    landing = Item(f"{HERE}test_a_landing_test_that_exists_covers_an_extended_one")
    more = Item(f"{HERE}test_more", tiers.extended(landing.nodeid))
    assert tiers.problems([landing, more], ROOT) == []


def test_a_parameter_id_names_one_run_of_a_test():
    covered = f"{HERE}test_a_parameter_id_names_one_run_of_a_test[a]"
    item = Item(f"{HERE}test_more[b]", tiers.extended(covered))
    assert tiers.problems([Item(covered), item], ROOT) == []


@pytest.mark.parametrize(
    ("covered_by", "says"),
    [
        ((), "names the landing tests that cover it"),
        ((f"{HERE}test_nothing_by_this_name",), "which no test file defines"),
        (("tests/test_no_such_file.py::test_x",), "which no test file defines"),
        (("tests/test_tiers.py",), "which no test file defines"),  # a module, not a test
    ],
)
def test_an_extended_test_without_a_landing_test_is_refused(covered_by, says):
    (problem,) = tiers.problems([Item(f"{HERE}test_more", tiers.extended(*covered_by))], ROOT)
    assert problem.startswith(f"{HERE}test_more: ") and says in problem, problem


def test_an_extended_test_cannot_be_covered_by_another_extended_one():
    first = f"{HERE}test_a_landing_test_that_exists_covers_an_extended_one"
    second = f"{HERE}test_a_parameter_id_names_one_run_of_a_test"
    items = [Item(first, tiers.extended(second)), Item(second, tiers.extended(first))]
    problems = tiers.problems(items, ROOT)
    assert len(problems) == 2 and all("which is extended too" in p for p in problems), problems
