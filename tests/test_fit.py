"""Known answers for the words that fit the numbers (``site.fit``)."""

from __future__ import annotations

import pytest

from attnreport.site.words import fit


@pytest.mark.parametrize(("dim", "limit"), [(576, 0.125), (64, 0.375), (9, 1.0), (4, 1.0)])
def test_cosine_threshold_by_dimension(dim, limit):
    assert fit.cosine_threshold(dim) == pytest.approx(limit)


def test_cosine_words_call_noise_orthogonal_and_say_the_threshold():
    assert fit.cosine_words(-0.043, 576).startswith("is about orthogonal to the hidden state")
    assert "within ±0.125 = 3/√576" in fit.cosine_words(0.012, 576)
    assert fit.cosine_words(0.31, 576) == "points along the hidden state (cosine 0.31)"
    assert fit.cosine_words(-0.2, 576) == "points against the hidden state (cosine -0.2)"
    # the same cosine is a direction in 64 dimensions only past 0.375
    assert fit.cosine_words(0.31, 64).startswith("is about orthogonal")
    assert fit.cosine_words(0.125, 576).startswith("is about orthogonal")  # at the line: not past


def test_margin_is_never_more_than_100_percentage_points():
    assert fit.margin_words(0.42) == "42 percentage points more probability than the runner-up"
    assert fit.margin_words(0.01) == "1 percentage point more probability than the runner-up"
    for near_one in (0.995, 0.9999, 1.0):
        text = fit.margin_words(near_one)
        assert "100" not in text and text.startswith("almost all of the probability")
    with pytest.raises(ValueError):
        fit.margin_words(1.2)


def test_curve_is_described_by_runs_and_peaks():
    values = {0: 0.32, 1: 0.2, 2: 0.1, **dict.fromkeys(range(3, 10), 0.0), 10: 0.2, 11: 0.35,
              **dict.fromkeys(range(12, 25), 0.01), 25: 0.1, 26: 0.2, 27: 0.25, 28: 0.28, 29: 0.30}  # fmt: skip
    text = fit.curve_words(values)
    assert text == (
        "zero in layers 3-9; near zero (under 5%) in layers 12-24; "
        "peaks of 35% in layer 11, 32% in layer 0 and 30% in layer 29"
    )
    assert "from" not in text


def test_curve_all_zero_and_single_peak():
    assert fit.curve_words(dict.fromkeys(range(4), 0.0)) == "zero in all 4 layers"
    assert fit.curve_words({0: 0.0, 1: 0.6, 2: 0.9}) == "zero in layer 0; a peak of 90% in layer 2"
    assert fit.curve_words({}) == ""
    assert fit.curve_words({0: 0.12, 1: 0.5, 2: 0.95, 3: 0.9}) == (
        "a peak of 95% in layer 2; lowest 12% in layer 0"
    )


def test_heads_are_named_up_to_eight():
    assert fit.heads_words([(5, 2)]) == "layer 5, head 2"
    assert fit.heads_words([(24, 7), (24, 6)]) == "layer 24, head 6 and layer 24, head 7"
    three = fit.heads_words([(1, 0), (2, 1), (3, 2)])
    assert three == "layer 1, head 0; layer 2, head 1 and layer 3, head 2"
    eight = fit.heads_words([(layer, 0) for layer in range(8)])
    assert eight.count("head 0") == 8
    nine = fit.heads_words([(layer, 0) for layer in range(9)])
    assert nine == "9 heads in layers 0-8"
    assert fit.heads_words([]) == "no heads"


def test_a_number_over_the_set_is_a_median_with_its_interval_or_its_range():
    assert fit.median_words([0.2]) == "20% (one sentence)"
    assert fit.median_words([0.2, 0.4, 0.3]) == (
        "a median 30% (range 20% to 40% over 3 sentences, too few for a 95% interval)"
    )
    six = [0.6, 0.2, 0.3, 0.4, 0.5, 0.7]  # n = 6: the interval is the whole range
    assert fit.median_words(six) == "a median 45% (95% interval 20% to 70%, 6 sentences)"
    close = [0.871, 0.872, 0.868, 0.87, 0.869, 0.873]  # every end rounds to 87%
    assert (
        fit.median_words(close) == "a median 87% (its 95% interval rounds to 87% too, 6 sentences)"
    )


def test_heads_are_named_with_the_kv_group_they_make():
    assert fit.structure_words([(24, 6), (24, 7), (24, 8)], 9, 3) == (
        "heads 6-8 of layer 24 (one KV group: they share their keys and values)"
    )
    assert fit.structure_words([(24, 6), (24, 7)], 9, 3) == "layer 24, head 6 and layer 24, head 7"
    assert fit.structure_words([(2, 0), (2, 1), (5, 2), (5, 3)], 4, 2) == (
        "heads 0-1 of layer 2 and heads 2-3 of layer 5 (2 KV groups, each sharing its keys "
        "and values)"
    )
    assert fit.structure_words([(1, 0), (1, 1)], 2, 2) == "layer 1, head 0 and layer 1, head 1"


def test_a_lead_near_one_is_never_written_as_100_points():
    assert fit.lead_words(0.42) == "a lead of 42 percentage points"
    assert fit.lead_words(0.996) == "a lead of almost all of the probability"
    assert fit.lead_words(1.0) == "a lead of almost all of the probability"
