"""What is special about one sentence: the opening of its page, computed from it.

Four observations, each left out when it has nothing to say:

- repeated tokens, and whether some head makes the earlier copy the top key of the later;
- code (keywords and symbols a sentence of prose does not have);
- words the tokenizer splits into pieces (``can|ap|é``);
- a band of layers where the sentence lies outside every other sentence of the set (its
  per-layer mean first-token or self focus beyond all of theirs), when the band has at
  least ``MIN_LAYERS`` layers: a stated band, never the one layer that departs most.

Inputs are plain values (token texts as decoded alone, ids, ``top`` rows, the set's
``focus_by_sentence`` columns); every function is pure and returns text or None.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from statistics import median
from typing import Any

from attnreport.site.words.fit import heads_words
from attnreport.site.words.wording import count, index_set, percent, short_list

CODE = re.compile(r"\b(def|return|class|import|lambda|for|while|if|else|elif|function|var|let|"
                  r"const|print)\b|[{}()\[\];=<>+*/]|->|=>|::")  # fmt: skip
CODE_MARKS = 3  # a sentence with at least this many code marks reads as code
WORDLIKE = re.compile(r"\w", re.UNICODE)
MIN_DEPARTURE = 0.1  # beyond the nearest other sentence by at least this (10 points)
MIN_LAYERS = 3  # a departure is stated over a band of at least this many layers
MIN_OTHERS = 5  # "outside every other sentence" needs at least this many others


def _shown(token: str) -> str:
    return token.strip() or repr(token)


def repeats(
    tokens: Sequence[str], ids: Sequence[int], tops: Sequence[Mapping[str, Any]]
) -> str | None:
    """Word tokens that occur again, and which heads send the later copy to the earlier one.

    tops: rows with layer, head, query, top_key (the ``top`` table). A later copy at i is
    "found" when some head's top key for query i is an earlier position of the same id.
    """
    earlier: dict[int, list[int]] = {}
    later: list[tuple[int, list[int]]] = []
    for i, (tok, tid) in enumerate(zip(tokens, ids, strict=True)):
        if WORDLIKE.search(tok) and tid in earlier:
            later.append((i, list(earlier[tid])))
        earlier.setdefault(tid, []).append(i)
    if not later:
        return None
    by_query: dict[int, set[tuple[int, int]]] = {}
    wanted = dict(later)
    for r in tops:
        q = int(r["query"])
        if q in wanted and int(r["top_key"]) in wanted[q]:
            by_query.setdefault(q, set()).add((int(r["layer"]), int(r["head"])))
    words = list(dict.fromkeys(_shown(tokens[i]) for i, _ in later))  # in reading order
    text = (
        f"It repeats {short_list([f'“{w}”' for w in words], 'word')} "
        f"({count(len(later), 'later copy')})"
    )
    if not by_query:
        return text + "; no head makes an earlier copy the top key of a later one."
    heads = sorted(set().union(*by_query.values()))
    return (
        text + f"; for {len(by_query)} of them some head makes the earlier copy its top key: "
        f"{heads_words(heads)}."
    )


def code(text: str) -> str | None:
    """``It reads as code: def, (, ), :...`` when it has ``CODE_MARKS`` code marks."""
    marks = [m.group(0) for m in CODE.finditer(text)]
    if len(marks) < CODE_MARKS:
        return None
    kinds = list(dict.fromkeys(marks))
    return f"It reads as code ({short_list([f'“{k}”' for k in kinds], 'mark')})."


def split_words(tokens: Sequence[str]) -> list[list[str]]:
    """Words the tokenizer cut into pieces: runs of word tokens where a piece does not
    start with a space. Empty when no token after the first starts with one (the
    tokenizer's pieces do not show word starts, so nothing can be said)."""
    if not any(t[:1].isspace() for t in tokens[1:]):
        return []
    words: list[list[str]] = []
    for i, tok in enumerate(tokens):
        joins = (
            i > 0 and not tok[:1].isspace() and tok[:1].isalnum() and tokens[i - 1][-1:].isalnum()
        )
        if joins and words:
            words[-1].append(tok)
        else:
            words.append([tok])
    return [w for w in words if len(w) > 1]


def splits(tokens: Sequence[str]) -> str | None:
    """``The tokenizer cuts 2 words into pieces: d|ort and can|ap|é.``"""
    words = split_words(tokens)
    if not words:
        return None
    shown = ["|".join(p.strip() for p in w) for w in words]
    return (
        f"The tokenizer cuts {count(len(words), 'word')} into pieces: {short_list(shown, 'word')}."
    )


def _outside(here: dict[int, float], others: dict[int, list[float]], sign: int) -> list[int]:
    """Layers where ``here`` lies beyond every other sentence by ``MIN_DEPARTURE`` (above
    for ``sign`` 1, below for -1)."""
    return [
        layer
        for layer, v in here.items()
        if len(others.get(layer, [])) >= MIN_OTHERS
        and sign * (v - (max if sign > 0 else min)(others[layer])) >= MIN_DEPARTURE
    ]


def departure(by_sentence: Mapping[str, Sequence[Any]], index: int) -> str | None:
    """Where sentence ``index`` lies outside every other sentence: the layers (at least
    ``MIN_LAYERS``) whose mean first-token or self focus is beyond all the others' by
    ``MIN_DEPARTURE``, with its median over those layers and the others' range there.
    None when no band qualifies or there are fewer than ``MIN_OTHERS`` others."""
    said = []
    for stat, name in (("first_focus", "first-token focus"), ("self_focus", "self focus")):
        here, others = _layer_means(by_sentence, stat, index)
        for sign, side in ((-1, "below"), (1, "above")):
            layers = _outside(here, others, sign)
            if len(layers) < MIN_LAYERS:
                continue
            theirs = [v for layer in layers for v in others[layer]]
            mine = median(here[layer] for layer in layers)
            said.append(
                f"In {index_set(layers, 'layer')} its {name} (a median {percent(mine)} over "
                f"those layers) lies {side} every other sentence's (theirs: "
                f"{percent(min(theirs))} to {percent(max(theirs))} there)."
            )
    return " ".join(said) or None


def _layer_means(
    cols: Mapping[str, Sequence[Any]], stat: str, index: int
) -> tuple[dict[int, float], dict[int, list[float]]]:
    """Per layer, sentence ``index``'s mean of ``stat`` over the heads, and each other
    sentence's (those with queries)."""
    acc: dict[tuple[int, int], list[float]] = {}
    rows = zip(cols.get("sentence", []), cols.get("layer", []), cols.get(stat, []),
               cols.get("n_queries", []), strict=True)  # fmt: skip
    for s, layer, v, n in rows:
        if int(n) > 0:
            acc.setdefault((int(s), int(layer)), []).append(float(v))
    here: dict[int, float] = {}
    others: dict[int, list[float]] = {}
    for (s, layer), v in sorted(acc.items()):
        if s == index:
            here[layer] = sum(v) / len(v)
        else:
            others.setdefault(layer, []).append(sum(v) / len(v))
    return here, others


def lede(
    text: str,
    tokens: Sequence[str],
    ids: Sequence[int],
    tops: Sequence[Mapping[str, Any]],
    by_sentence: Mapping[str, Sequence[Any]],
    index: int,
) -> list[str]:
    """The observations that hold for this sentence, in reading order (maybe none)."""
    found = [repeats(tokens, ids, tops), code(text), splits(tokens), departure(by_sentence, index)]
    return [f for f in found if f]
