"""``--pages``: which sentences of a corpus get a page."""

from __future__ import annotations

import pytest

from attnreport.errors import AttnReportError
from attnreport.page_choice import PageChoice, page_indices, parse_pages


def test_counts_lists_and_ranges():
    assert page_indices(parse_pages("all"), 4) == (0, 1, 2, 3)
    assert page_indices(parse_pages("2"), 3000) == (0, 1)
    assert page_indices(parse_pages("10"), 3) == (0, 1, 2)
    assert page_indices(parse_pages(" 7, 2-4 ,2"), 3000) == (2, 3, 4, 7)


def test_the_intervention_sentence_always_gets_a_page():
    assert page_indices(parse_pages("2"), 3000, keep=[900]) == (0, 1, 900)
    assert page_indices(PageChoice(indices=(5,)), 10, keep=[0]) == (0, 5)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("x", r"give 'all', a count N, or indices like 0,5,10-12$"),
        ("1,,2", "give 'all'"),
        ("5-2", "range 5-2 runs backwards$"),
        ("-1", "give 'all'"),
    ],
)
def test_bad_choices_are_one_line_errors(text, message):
    with pytest.raises(AttnReportError, match=message):
        parse_pages(text)


def test_an_index_outside_the_corpus_is_refused():
    with pytest.raises(
        AttnReportError, match=r"sentence 12 does not exist \(the corpus has 10, 0-9\)"
    ):
        page_indices(parse_pages("3,12"), 10)
