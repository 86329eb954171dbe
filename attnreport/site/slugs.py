"""Safe, unique page file names for any sentence text.

A page name is ``s`` + the zero-padded sentence index + a short ASCII rendering of the
text, for example ``s003-the-cat-sat.html``. The index prefix makes names unique and never
empty; only ``[a-z0-9-]`` survive, so a name can never be ``..``, hold a slash, or need URL
escaping, and it is the same on every operating system and file system.
"""

from __future__ import annotations

import re
import unicodedata

MAX_WORDS_CHARS = 40  # length bound for the text part of a slug
_NOT_ALNUM = re.compile(r"[^a-z0-9]+")


def ascii_words(text: str, limit: int = MAX_WORDS_CHARS) -> str:
    """Lower-case ASCII words of ``text`` joined by ``-``, cut at a word edge to ``limit``.

    Accents are dropped (``é`` -> ``e``); characters with no ASCII form vanish. May be empty.
    """
    decomposed = unicodedata.normalize("NFKD", text)
    plain = decomposed.encode("ascii", "ignore").decode("ascii").lower()
    words = [w for w in _NOT_ALNUM.split(plain) if w]
    out = ""
    for word in words:
        candidate = f"{out}-{word}" if out else word
        if len(candidate) > limit:
            if not out:  # a single very long word: cut it
                out = word[:limit]
            break
        out = candidate
    return out


def sentence_slug(index: int, text: str) -> str:
    """The page stem for sentence ``index``: ``s000`` plus up to 40 characters of its words."""
    if index < 0:
        raise ValueError(f"sentence index must be >= 0, got {index}")
    words = ascii_words(text)
    prefix = f"s{index:03d}"
    return f"{prefix}-{words}" if words else prefix


def sentence_filename(index: int, text: str) -> str:
    """The page file name for sentence ``index`` (``sentence_slug`` + ``.html``)."""
    return sentence_slug(index, text) + ".html"
