"""The prose rules: ranges, counts, numbers, shares and lists read as a researcher writes."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from attnreport.site.words import wording as w


@pytest.mark.parametrize(
    ("values", "total", "expected"),
    [
        ([3], 30, "layer 3"),
        ([0], 1, "the only layer"),
        ([0, 1], 2, "both layers"),
        (range(30), 30, "all 30 layers"),
        ([3, 7], 30, "layers 3 and 7"),
        ([3, 4], 30, "layers 3-4"),
        ([*range(2, 10), *range(12, 30)], 30, "layers 2-9 and 12-29"),
        ([*range(3, 10), *range(12, 30)], 30, "layers 3-9 and 12-29"),
        (range(0, 29, 2), 30, "every other layer from 0 to 28"),
        ([1, 3], 30, "layers 1 and 3"),  # two items: a list, not a pattern
        ([0, 2, 5, 9, 14, 20, 27, 29], 30, "8 of 30 layers, from 0 to 29"),
        ([0, 2, 5, 9, 14, 20, 27, 29], None, "8 layers, from 0 to 29"),
        ([], 30, "no layers"),
        ([5, 5, 4], None, "layers 4-5"),
    ],
)
def test_index_set(values, total, expected):
    assert w.index_set(values, "layer", total) == expected


def test_index_set_full_range_not_starting_at_zero_is_a_range():
    assert w.index_set(range(1, 31), "layer", 30) == "layers 1-30"


@given(st.sets(st.integers(0, 40), min_size=1))
@example(set(range(41)))
def test_index_set_never_lists_more_than_six_items(values):
    text = w.index_set(values, "head", 41)
    assert text.count(",") + text.count(" and ") <= w.MAX_ITEMS
    if values == set(range(41)):  # every head: said as such, with no bounds to name
        assert text == "all 41 heads"
    else:
        assert str(min(values)) in text and str(max(values)) in text


def test_runs():
    assert w.runs([5, 1, 2, 3, 9, 10]) == [(1, 3), (5, 5), (9, 10)]
    assert w.runs([0, 2, 4, 7], step=2) == [(0, 4), (7, 7)]
    assert w.runs([]) == []


def test_head_set_groups_heads_by_layer_and_summarises_many_layers():
    assert w.head_set([(11, 6)]) == "head 6 of layer 11"
    assert (
        w.head_set([(3, 0), (3, 1), (3, 2), (7, 5)]) == "heads 0-2 of layer 3 and head 5 of layer 7"
    )
    many = [(layer, 0) for layer in range(2, 10)] + [(3, 4)]
    assert w.head_set(many) == "9 heads in layers 2-9"
    assert w.head_set([]) == "no heads"


@pytest.mark.parametrize(
    ("word", "n", "expected"),
    [("head", 1, "head"), ("head", 2, "heads"), ("head", 0, "heads"), ("query", 2, "queries"),
     ("query", 1, "query"), ("day", 2, "days"), ("puts", 3, "put"), ("is", 2, "are")],
)  # fmt: skip
def test_plural(word, n, expected):
    assert w.plural(word, n) == expected


def test_count_agrees_with_its_noun():
    assert w.count(1, "head") == "1 head"
    assert w.count(270, "head") == "270 heads"
    assert w.count(0, "query") == "no queries"
    assert w.count(1200, "token") == "1,200 tokens"


@pytest.mark.parametrize(
    ("value", "expected"),
    [(0, "0%"), (1, "100%"), (0.853, "85%"), (0.5, "50%"), (0.996, "99.6%"), (0.004, "0.4%"),
     (0.9999, "over 99.9%"), (0.0004, "under 0.1%"), (0.999, "99.9%"), (0.29, "29%"),
     (0.0099, "1%"), (0.991, "99.1%")],
)  # fmt: skip
def test_percent_keeps_the_precision_the_value_needs(value, expected):
    assert w.percent(value) == expected


@given(st.floats(0, 1))
def test_percent_never_rounds_to_an_end_it_does_not_reach(share):
    text = w.percent(share)
    assert (text == "100%") == (share == 1) and (text == "0%") == (share == 0)


@pytest.mark.parametrize(
    ("value", "expected"),
    [(1.04, "1.04"), (0.218, "0.218"), (12.34, "12.3"), (1234.5, "1,234"), (999.7, "1,000"),
     (1.0, "1"), (0, "0"), (-0.0, "0"), (3.2e-5, "3.20e-5"), (-0.0146, "-0.0146")],
)  # fmt: skip
def test_number(value, expected):
    assert w.number(value) == expected


def test_times_never_says_one_times():
    assert w.times(1.04, "the hidden state") == "1.04 times the size of the hidden state"
    assert w.times(1.004, "x") == "about the size of x"
    assert w.times(0.996, "x") == "about the size of x"
    assert w.times(0.218, "x") == "22% of the size of x"
    assert w.times(0.95, "x") == "95% of the size of x"
    assert w.times(1.14, "x") == "1.14 times the size of x"


def test_points_for_probability_differences():
    assert w.points(0.95) == "95 percentage points"
    assert w.points(0.01) == "1 percentage point"
    assert w.points(0.996) == "99.6 percentage points"
    assert w.points(-0.2) == "minus 20 percentage points"
    assert w.points(0) == "0 percentage points"


def test_quantity_names_its_unit_in_agreement():
    assert w.quantity(0.314, "nat") == "0.31 nats"
    assert w.quantity(1.0, "nat") == "1 nat"
    assert w.quantity(2.1e-5, "nat") == "2.1e-5 nats"


def test_short_list_summarises_long_lists():
    assert w.short_list(["a", "b"], "item") == "a and b"
    items = [str(i) for i in range(9)]
    assert w.short_list(items, "item") == "0, 1, 2, 3, 4 and 4 more items"
    assert w.short_list(items[:7], "item") == "0, 1, 2, 3, 4 and 2 more items"


def test_shorten_cuts_at_a_word_boundary():
    text = "The old lighthouse keeper climbed the narrow stairs every evening to light the lamp"
    short = w.shorten(text, 40)
    assert short == "The old lighthouse keeper climbed the…" and len(short) <= 40
    assert w.shorten("  a   b  ", 40) == "a b"
    assert w.shorten("x" * 50, 10) == "x" * 9 + "…"
    assert w.shorten("def add(a, b): return a + b", 27) == "def add(a, b): return a + b"


def test_join_and_and_capitalise():
    assert w.join_and([]) == "" and w.join_and(["a"]) == "a"
    assert w.join_and(["a", "b", "c"]) == "a, b and c"
    assert w.join_and(["a", "b"], "or") == "a or b"
    assert w.capitalise("layers 2-9 put") == "Layers 2-9 put" and w.capitalise("") == ""
    assert w.lowercase_first("Layers 2-9 put") == "layers 2-9 put" and w.lowercase_first("") == ""


def test_verb_agrees_with_an_index_set():
    assert w.verb_for("layer 3", "puts") == "puts"
    assert w.verb_for("Every other layer from 0 to 8", "puts") == "puts"
    assert w.verb_for("the only layer", "has") == "has"
    assert w.verb_for("layers 2-9 and 12-29", "puts") == "put"
    assert w.verb_for("all 30 layers", "has") == "have"
    assert w.verb_for("both layers", "does") == "do"


@pytest.mark.parametrize(
    ("value", "digits", "expected"),
    [(0.19, 3, "0.190"), (1.0, 2, "1.0"), (1.0, 3, "1.00"), (0.2, 2, "0.20"), (12.0, 2, "12"),
     (9.996, 3, "10.0"), (0.218, 3, "0.218"), (1234.5, 3, "1,234"), (0, 3, "0")],
)  # fmt: skip
def test_number_with_zeros_shows_every_digit_asked_for(value, digits, expected):
    assert w.number(value, digits, zeros=True) == expected


def test_a_range_of_sizes_reads_alike_at_both_ends():
    """Below 1 both ends are percentages; a range that reaches 1 is written in times at
    both ends (Gemma's heads read "from 2% to 3.66 times" before)."""
    assert w.size_range(0.09, 0.32) == "9% to 32%"
    assert w.size_range(0.0213, 3.66) == "0.021 to 3.7 times"
    assert w.size_range(1.2, 3.0) == "1.2 to 3.0 times"
