"""Text as the pages show it: one implementation each for showing a token or a sentence
(control characters made visible) and for JSON inside ``<script>``.

The token strip, the chart axes and the tooltips all call ``display_token``; sentence
texts, titles and the model card call ``visible``; every ``<script>`` payload and chunk
file goes through ``script_json``.
"""

from __future__ import annotations

import json
import re
from typing import Any

OPEN_BOX = "\u2423"  # ␣, drawn for a token made only of spaces


def _visible_char(ch: str) -> str:
    code = ord(ch)
    if code < 0x20:
        return chr(0x2400 + code)  # Control Pictures: NUL -> ␀, newline -> ␊
    if code == 0x7F:
        return "\u2421"  # ␡
    if 0x80 <= code < 0xA0:
        return f"\\x{code:02x}"  # C1 controls have no picture: show their code
    if 0xD800 <= code < 0xE000:
        return "\ufffd"  # a lone surrogate cannot be encoded
    return ch


def visible(text: str) -> str:
    """``text`` with characters HTML cannot carry or shows as nothing made visible.

    C0 controls become their U+2400 symbols (NUL -> ␀, newline -> ␊), DEL -> ␡, C1
    controls -> ``\\x85`` text, lone surrogates -> U+FFFD. Everything else, including
    zero-width characters, RTL text, quotes and ``</script>``, is kept: it travels as data.
    """
    return "".join(_visible_char(ch) for ch in text)


def display_token(text: str) -> str:
    """A token as drawn in the strip, on the axes and in tooltips: ``visible``, and a
    token of only spaces (or empty) as one open box per character (at least one)."""
    shown = visible(text)
    return shown if shown.strip() else OPEN_BOX * max(1, len(shown))


_SCRIPT_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026"}
_SCRIPT_UNSAFE = re.compile("[<>&\u2028\u2029\ud800-\udfff]")


def _script_escape(match: re.Match[str]) -> str:
    ch = match.group()
    return _SCRIPT_ESCAPES.get(ch) or f"\\u{ord(ch):04x}"


def escape_script(json_text: str) -> str:
    """JSON text made safe inside ``<script>`` (JSON or JS) and in a JS source file.

    ``<``, ``>``, ``&``, U+2028, U+2029 and lone surrogates can only occur inside JSON
    strings, where their ``\\uXXXX`` escapes mean the same; so no string in the data can
    close the script element or open a comment, and ``JSON.parse`` gives back the value.
    Idempotent: escaping escaped text changes nothing.
    """
    return _SCRIPT_UNSAFE.sub(_script_escape, json_text)


def script_json(value: Any) -> str:
    """Compact ASCII JSON of ``value``, safe inside ``<script>`` (see ``escape_script``)."""
    text = json.dumps(value, ensure_ascii=True, allow_nan=False, separators=(",", ":"))
    return escape_script(text)
