"""Byte-level pieces of one character are drawn as that character in the token strip,
with the pieces named in its title. The pieces come from a real byte-level BPE tokenizer
(trained here on a few words, so emoji and CJK characters split into byte tokens), and
each group's text is checked against the tokenizer decoding the group's ids together."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

from attnreport.results.tables import TokensTable
from attnreport.site.byte_tokens import REPLACEMENT, byte_groups, is_piece
from attnreport.site.pages import tokens_of
from tests.fixtures.fake_results import fake_study, typed

TEXT = "I love 😀 and 日本 too, café 🎉🎉!"


def byte_level_tokenizer() -> Tokenizer:
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=300, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False
    )
    tokenizer.train_from_iterator(["I love it and too, cafe!"] * 20, trainer)
    return tokenizer


def test_runs_of_byte_pieces_are_the_characters_they_spell():
    tokenizer = byte_level_tokenizer()
    ids = tokenizer.encode(TEXT).ids
    tokens = [tokenizer.decode([i]) for i in ids]
    assert sum(is_piece(t) for t in tokens) >= 8  # the emoji and CJK really are split
    groups = byte_groups(TEXT, tokens)
    shown = [g.text.strip() for g in groups]
    assert shown == ["😀", "日本", "é", "🎉🎉"] or shown == ["😀", "日", "本", "é", "🎉", "🎉"]
    for group in groups:
        assert tokenizer.decode(ids[group.start : group.end]) == group.text  # independent
        assert all(is_piece(t) for t in tokens[group.start : group.end])
    covered = {i for g in groups for i in range(g.start, g.end)}
    assert all(not is_piece(t) for i, t in enumerate(tokens) if i not in covered)


def test_the_strip_draws_one_chip_per_character_naming_its_pieces():
    tokenizer = byte_level_tokenizer()
    ids = tokenizer.encode(TEXT).ids
    tokens = [tokenizer.decode([i]) for i in ids]
    sentence = typed(fake_study(1)).sentences[0]
    table = TokensTable(
        position=np.arange(len(ids)), token=tokens, token_id=np.array(ids, dtype=np.int64)
    )
    chips = tokens_of(replace(sentence, text=TEXT, tokens=table))
    assert not any(REPLACEMENT in c.text for c in chips)
    assert "".join(c.text for c in chips).replace("␣", " ") == TEXT  # spaces drawn as boxes
    assert len(chips) < len(ids)
    emoji = next(c for c in chips if "😀" in c.text)
    assert emoji.title.startswith(f"{len(emoji.pieces)} byte pieces of one character: id ")
    assert [p for _, p in emoji.pieces] == list(
        range(emoji.position, emoji.position + len(emoji.pieces))
    )
    plain = next(c for c in chips if c.text == "I")
    assert plain.pieces == () and plain.title == f"id {plain.token_id} · position 0"


def test_pieces_that_cannot_be_placed_stay_as_they_are():
    tokens = ["<s>", "a", REPLACEMENT, REPLACEMENT, "b"]
    assert byte_groups("a€b", tokens)[0].text == "€"
    assert byte_groups("xyz", tokens) == []  # the walk never finds its place
