"""Byte-level pieces in the token strip: a character the tokenizer split into several
byte tokens (an emoji, a CJK character) is drawn as that one character.

Each token is stored as its own decoding (``tokenizer.decode([id])``), so a piece that is
only part of a UTF-8 character reads as U+FFFD. The sentence's text is stored too: walking
the tokens along it, a run of such pieces spans exactly the text between the tokens around
it, and that text is what the run stands for. Tokens that are not in the text (a BOS, a
special token) are passed over; when the walk loses its place, the pieces stay as they are.
"""

from __future__ import annotations

from dataclasses import dataclass

REPLACEMENT = "\ufffd"


@dataclass(frozen=True)
class Group:
    """Tokens ``start`` to ``end`` (exclusive) drawn as one chip reading ``text``."""

    start: int
    end: int
    text: str


def is_piece(token: str) -> bool:
    """A token that decodes to part of a character: U+FFFD, maybe after spaces."""
    return REPLACEMENT in token and not token.replace(REPLACEMENT, "").strip()


def _run_end(tokens: list[str], start: int) -> int:
    end = start
    while end < len(tokens) and is_piece(tokens[end]):
        end += 1
    return end


def byte_groups(text: str, tokens: list[str]) -> list[Group]:
    """The runs of byte pieces in ``tokens`` (in order) with the text each stands for;
    runs whose text cannot be found are left out (drawn piece by piece)."""
    groups, cursor, i = [], 0, 0
    while i < len(tokens):
        token = tokens[i]
        if not is_piece(token):
            if text.startswith(token, cursor):
                cursor += len(token)
            i += 1
            continue
        end = _run_end(tokens, i)
        following = next((t for t in tokens[end:] if t and not is_piece(t)), None)
        stop = len(text) if following is None else text.find(following, cursor)
        shown = text[cursor:stop] if stop > cursor else ""
        if shown and REPLACEMENT not in shown and len(shown.strip()) <= end - i:
            groups.append(Group(i, end, shown))
            cursor = stop
        i = end
    return groups
