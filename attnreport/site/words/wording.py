"""Prose rules: how the report writes numbers, counts, lists and ranges.

Every sentence the report computes from data goes through these helpers, so the same
quantity always reads the same way:

- runs of consecutive layers or heads are ranges (``layers 2-9 and 12-29``), a full set
  is ``all 30 layers``, a step-2 run is ``every other layer from 0 to 28``;
- a list never has more than ``MAX_ITEMS`` items: longer ones are summarised
  (``14 of 30 layers, from 2 to 29``);
- shares are percentages with the precision the value needs (``99.6%``, not ``100%``,
  for 0.996); differences of probabilities are percentage points; size ratios below 1 are
  percentages and above 1 are ``1.04 times`` (never ``1 times``);
- counts agree with their noun (``1 head``, ``2 heads``) and quantities name their unit.

All functions are pure and return plain text (the templates escape it).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

MAX_ITEMS = 6  # the longest list a sentence names item by item
IRREGULAR = {"query": "queries", "is": "are", "puts": "put", "has": "have", "was": "were",
             "gives": "give", "makes": "make", "does": "do"}  # fmt: skip


def plural(word: str, count: float) -> str:
    """``word`` made to agree with ``count`` (``head``/``heads``, ``query``/``queries``)."""
    if count == 1:
        return word
    if word in IRREGULAR:
        return IRREGULAR[word]
    return word[:-1] + "ies" if word.endswith("y") and word[-2:-1] not in "aeiou" else word + "s"


def count(n: int, noun: str) -> str:
    """``1 head``, ``3 heads``, ``no heads``, ``1,200 tokens``."""
    if n == 0:
        return f"no {plural(noun, 0)}"
    return f"{n:,} {plural(noun, n)}"


def capitalise(text: str) -> str:
    """``text`` with its first character in upper case (the rest unchanged)."""
    return text[:1].upper() + text[1:]


def lowercase_first(text: str) -> str:
    """``text`` with its first character in lower case, to follow a comma or a colon
    (``capitalise``'s inverse)."""
    return text[:1].lower() + text[1:]


def join_and(items: Iterable[str], conjunction: str = "and") -> str:
    """``a``, ``a and b``, ``a, b and c`` (no Oxford comma)."""
    items = list(items)
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + f" {conjunction} " + items[-1]


def short_list(items: Sequence[str], noun: str, limit: int = MAX_ITEMS) -> str:
    """``a, b and c``; more than ``limit`` items: the first ``limit - 1`` and ``N more``."""
    if len(items) <= limit:
        return join_and(items)
    rest = len(items) - (limit - 1)
    return join_and([*items[: limit - 1], f"{rest} more {plural(noun, rest)}"])


def runs(values: Iterable[int], step: int = 1) -> list[tuple[int, int]]:
    """Maximal runs ``(first, last)`` of sorted unique ints that go up by ``step``."""
    out: list[tuple[int, int]] = []
    for v in sorted(set(int(x) for x in values)):
        if out and v == out[-1][1] + step:
            out[-1] = (out[-1][0], v)
        else:
            out.append((v, v))
    return out


def _run_text(first: int, last: int) -> str:
    return str(first) if first == last else f"{first}-{last}"


def index_set(values: Iterable[int], noun: str, total: int | None = None) -> str:
    """A set of layers or heads as a reader wants it; ``total`` = how many exist (0..total-1).

    ``layer 3``, ``layers 3 and 7``, ``layers 2-9 and 12-29``, ``all 30 layers``
    (``both layers``, ``the only layer``),
    ``every other layer from 0 to 28`` (at least three, step 2), or, when the ranges would
    make a list longer than ``MAX_ITEMS``, ``14 of 30 layers, from 2 to 29``. Empty: ``no
    layers``.
    """
    items = sorted(set(int(v) for v in values))
    if not items:
        return f"no {plural(noun, 0)}"
    if total is not None and len(items) == total and items == list(range(total)):
        if total <= 2:
            return f"the only {noun}" if total == 1 else f"both {plural(noun, 2)}"
        return f"all {total} {plural(noun, total)}"
    if len(items) == 1:
        return f"{noun} {items[0]}"
    pieces = [_run_text(a, b) for a, b in runs(items)]
    if len(items) >= 3 and len(runs(items, 2)) == 1 and len(pieces) == len(items):
        return f"every other {noun} from {items[0]} to {items[-1]}"
    if len(pieces) <= MAX_ITEMS:
        return f"{plural(noun, 2)} {join_and(pieces)}"
    of_total = f" of {total}" if total is not None else ""
    return f"{len(items)}{of_total} {plural(noun, 2)}, from {items[0]} to {items[-1]}"


def verb_for(phrase: str, verb: str) -> str:
    """``verb`` (singular form, ``puts``) agreeing with a phrase from ``index_set``:
    singular after ``layer 3``, ``the only layer``, ``every other layer``; else plural.
    """
    words = phrase.lower().split()
    singular = len(words) >= 2 and (
        words[:2] in (["the", "only"], ["every", "other"])
        or (words[0] in ("layer", "head") and words[1].isdigit())
    )
    return verb if singular else plural(verb, 2)


def head_set(heads: Iterable[tuple[int, int]], limit: int = MAX_ITEMS) -> str:
    """(layer, head) pairs grouped by layer: ``head 6 of layer 11``, ``heads 0-2 of layer 3
    and head 5 of layer 7``; more than ``limit`` groups: ``12 heads in layers 3-9``.
    """
    by_layer: dict[int, list[int]] = {}
    for layer, head in sorted(set((int(a), int(b)) for a, b in heads)):
        by_layer.setdefault(layer, []).append(head)
    if not by_layer:
        return "no heads"
    if len(by_layer) > limit:
        n = sum(len(h) for h in by_layer.values())
        return f"{count(n, 'head')} in {index_set(by_layer, 'layer')}"
    return join_and(f"{index_set(h, 'head')} of layer {layer}" for layer, h in by_layer.items())


def number(value: float, digits: int = 3, zeros: bool = False) -> str:
    """A decimal with ``digits`` significant digits, thousands separators, no exponent for
    ordinary sizes: ``1.04``, ``0.218``, ``12.3``, ``1,234``, ``3.2e-5``; ``-0`` reads ``0``.
    ``zeros`` keeps trailing zeros (``0.190``, ``1.00``: numbers read side by side, such
    as an interval's ends, show the same precision)."""
    v = float(value)
    if not math.isfinite(v):
        return str(v)
    if v == 0:
        return "0"
    if abs(v) < 1e-3:
        return f"{v:.{max(digits - 1, 0)}e}".replace("e-0", "e-")
    if abs(v) >= 10**digits:
        return f"{round(v):,}"
    text = f"{v:#.{digits}g}".rstrip(".") if zeros else f"{v:.{digits}g}"
    return text if "e" not in text else f"{v:,.0f}"


def percent(share: float) -> str:
    """A share in [0, 1] as a percentage with the precision it needs.

    Whole percent when that is faithful (``0.853`` -> ``85%``); one decimal near the ends,
    so ``0.996`` is ``99.6%`` and ``0.004`` is ``0.4%``, never ``100%`` or ``0%`` for a
    value that is not exactly 1 or 0; below 0.1% ``under 0.1%``, above 99.9% ``over 99.9%``.
    """
    v = 100 * float(share)
    if v == 0 or v == 100 or 1 <= v <= 99:
        return f"{round(v)}%"
    if 0 < v < 0.1:
        return "under 0.1%"
    if 99.9 < v < 100:
        return "over 99.9%"
    return f"{v:.1f}%".replace(".0%", "%")


def points(difference: float) -> str:
    """A difference of two probabilities in percentage points: ``0.95`` -> ``95 percentage
    points``, ``0.01`` -> ``1 percentage point`` (same precision rules as ``percent``).
    """
    text = percent(abs(float(difference))).replace("%", "")
    unit = "point" if text == "1" else "points"
    sign = "minus " if float(difference) < 0 and text != "0" else ""
    return f"{sign}{text} percentage {unit}"


def times(ratio: float, what: str) -> str:
    """How big something is next to ``what``: ``22% of the size of what`` below 1,
    ``about the size of what`` when it rounds to 1, ``1.04 times the size of what`` above.
    """
    r = float(ratio)
    if round(r, 2) == 1:
        return f"about the size of {what}"
    if r < 1:
        return f"{percent(r)} of the size of {what}"
    return f"{number(r)} times the size of {what}"


def size_range(low: float, high: float) -> str:
    """A range of size ratios written alike at both ends: ``9% to 32%`` below 1, else
    ``0.09 to 1.2 times`` (never a percentage at one end and a multiple at the other)."""
    if float(high) < 1:
        return f"{percent(low)} to {percent(high)}"
    return f"{number(low, 2)} to {number(high, 2, zeros=True)} times"


def quantity(value: float, unit: str, digits: int = 2) -> str:
    """A number with its unit, agreeing in number: ``0.31 nats``, ``1 nat``, ``2.1e-5 nats``."""
    text = number(value, digits)
    return f"{text} {plural(unit, 1 if text == '1' else 2)}"


def shorten(text: str, limit: int = 60) -> str:
    """``text`` cut at a word boundary to at most ``limit`` characters, with an ellipsis.

    Whitespace runs become single spaces. A single word longer than ``limit`` is cut in
    the middle of the word.
    """
    words = " ".join(str(text).split())
    if len(words) <= limit:
        return words
    cut = words[: limit - 1]
    if " " in cut and words[limit - 1] != " ":
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip(" ,;:.-") + "…"


def head_name(layer: int, head: int) -> str:
    """``layer 3, head 2``."""
    return f"layer {int(layer)}, head {int(head)}"
