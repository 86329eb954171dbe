"""A sentence page's lede on hand-made token sequences: repeats, code, split words, and
where a sentence departs from the set."""

from __future__ import annotations

from attnreport.site.words import lede
from tests.noise_scan import stated_noise

TOKENS = ["The", " dog", " chased", " the", " cat", ",", " the", " cat", " ran"]
IDS = [1, 2, 3, 4, 5, 6, 4, 5, 7]


def top(layer, head, query, key):
    return {"layer": layer, "head": head, "query": query, "top_key": key}


def test_repeats_name_the_heads_that_find_the_earlier_copy():
    tops = [top(5, 2, 6, 3), top(5, 2, 7, 4), top(1, 0, 7, 0), top(3, 1, 6, 0)]
    text = lede.repeats(TOKENS, IDS, tops)
    assert text == (
        "It repeats “the” and “cat” (2 later copies); for 2 of them some head makes the earlier "
        "copy its top key: layer 5, head 2."
    )
    missed = lede.repeats(TOKENS, IDS, [top(1, 0, 7, 0)])
    assert missed.endswith("no head makes an earlier copy the top key of a later one.")
    assert lede.repeats(["a", " b"], [1, 2], []) is None
    # a repeated comma is not a repeated word
    assert lede.repeats(["a", ",", " b", ","], [1, 9, 2, 9], []) is None


def test_code_is_recognised_and_prose_is_not():
    assert lede.code("def add(a, b): return a + b") == (
        "It reads as code (“def”, “(”, “)”, “return” and “+”)."
    )
    assert lede.code("The dog chased the cat, and the cat ran.") is None
    assert lede.code("Why (really) do cats sleep?") is None  # two marks only


def test_words_split_into_pieces():
    tokens = ["Le", " chat", " d", "ort", " sur", " le", " can", "ap", "é", "."]
    assert lede.split_words(tokens) == [[" d", "ort"], [" can", "ap", "é"]]
    assert lede.splits(tokens) == "The tokenizer cuts 2 words into pieces: d|ort and can|ap|é."
    assert lede.splits(TOKENS) is None  # whole words and punctuation only
    # pieces without word-start spaces (the tokenizer's own form): nothing can be said
    assert lede.splits(["Le", "chat", "d", "ort"]) is None


def _by_sentence(values):
    """focus_by_sentence columns from {sentence: {layer: (first, self)}}, one head each."""
    rows = [(s, layer, f, m) for s, layers in values.items() for layer, (f, m) in layers.items()]
    return {
        "sentence": [r[0] for r in rows], "layer": [r[1] for r in rows], "head": [0] * len(rows),
        "first_focus": [r[2] for r in rows], "self_focus": [r[3] for r in rows],
        "n_queries": [4] * len(rows),
    }  # fmt: skip


def test_departure_is_a_band_outside_every_other_sentence_never_a_maximum():
    """Sentence 0's self focus lies above all five others in layers 0-2 (10 points or more);
    in layer 3 it is above them by only 5 points: the band is layers 0-2."""
    others = {s: {lay: (0.2, 0.1 + 0.01 * s) for lay in range(5)} for s in range(1, 6)}
    mine = {0: (0.2, 0.5), 1: (0.2, 0.6), 2: (0.2, 0.4), 3: (0.2, 0.2), 4: (0.2, 0.1)}
    cols = _by_sentence({0: mine, **others})
    text = lede.departure(cols, 0)
    assert text == (
        "In layers 0-2 its self focus (a median 50% over those layers) lies above every other "
        "sentence's (theirs: 11% to 15% there)."
    )
    assert stated_noise(text) == []
    two = {**mine, 2: (0.2, 0.1)}  # only layers 0-1 stand out: fewer than 3 layers
    assert lede.departure(_by_sentence({0: two, **others}), 0) is None
    few = {s: others[s] for s in (1, 2, 3)}  # three others are too few to say "every other"
    assert lede.departure(_by_sentence({0: mine, **few}), 0) is None


def test_lede_keeps_what_holds_in_order():
    found = lede.lede("the cat, the cat", TOKENS, IDS, [top(5, 2, 6, 3)], _by_sentence({}), 0)
    assert len(found) == 1 and found[0].startswith("It repeats")
