"""Findings about head roles (``set.json`` ``head_roles``, schema version 5).

``role_heads``: the heads whose induction score (on the probes) and whose previous-token
score (on the sentences) reach ``ROLE_THRESHOLD``: how many, where (the heads, or the
layers they lie in) and their scores' spread; never the one strongest head picked from
the list. Whether sink heads write little is the source blog's claim, tested in its own
scope by ``claims.blog``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from attnreport.analyses.role_rules import MIN_REPEATS, ROLE_THRESHOLD
from attnreport.results.roles import counts_query_one
from attnreport.site.words import fit
from attnreport.site.words.fit import NAME_HEADS, heads_words
from attnreport.site.words.readings import Finding, columns
from attnreport.site.words.wording import count, index_set, number

LITTLE = 0.5  # sink heads "move little" when their median update is under half the others'


def _by_head(cols: Mapping[str, Any], score: str) -> dict[tuple[int, int], float]:
    return {
        (int(a), int(b)): float(v)
        for a, b, v in zip(cols["layer"], cols["head"], cols[score], strict=True)
    }


def _where(heads: list[tuple[int, int]]) -> str:
    """The heads by name (at most ``fit.NAME_HEADS``), else the layers they lie in."""
    if len(heads) <= NAME_HEADS:
        return heads_words(heads)
    return "in " + index_set({a for a, _ in heads}, "layer")


def _per_sentence(
    by_sentence: Mapping[str, Any], heads: list[tuple[int, int]], score: str
) -> list[float]:
    """Per sentence (with queries), the median of ``score`` over ``heads``."""
    c = {k: np.asarray(v) for k, v in by_sentence.items()}
    wanted = np.zeros(len(c["layer"]), dtype=bool)
    for a, b in heads:
        wanted |= (c["layer"] == a) & (c["head"] == b)
    wanted &= c["n_queries"] > 0
    return [float(np.median(c[score][wanted & (c["sentence"] == s)]))
            for s in np.unique(c["sentence"][wanted])]  # fmt: skip


def role_heads(set_tables: Mapping[str, Any]) -> Finding | None:
    """The induction and previous-token heads (score at least ``ROLE_THRESHOLD``)."""
    roles = columns(set_tables.get("head_roles"))
    if not roles:
        return None
    by_sentence = columns(set_tables.get("head_roles_by_sentence"))
    parts = []
    induction = _by_head(roles, "induction")
    found = sorted(k for k, v in induction.items() if v >= ROLE_THRESHOLD)
    if found:
        scores = [induction[k] for k in found]
        weight = (  # one head has no range over the heads to give
            f"it puts {number(scores[0], 2)} of its attention"
            if len(found) == 1
            else f"they put a median {number(float(np.median(scores)), 2)} of their attention "
            f"(range {number(min(scores), 2)} to {number(max(scores), 2)} over the heads)"
        )
        parts.append(
            f"{count(len(found), 'head')} {'is an induction head' if len(found) == 1 else 'are induction heads'} "
            f"({_where(found)}): on 10 probes of 50 random tokens repeated twice {weight} on "
            "the token after the earlier copy of the current one"
        )
    else:
        parts.append(f"no head reaches an induction score of {ROLE_THRESHOLD:g} on the probes")
    previous = _by_head(roles, "previous_token")
    found = sorted(k for k, v in previous.items() if v >= ROLE_THRESHOLD)
    if found:
        spread = _per_sentence(by_sentence, found, "previous_token") if by_sentence else []
        weight = (
            fit.median_words(spread, lambda v: number(v, 2, zeros=True))
            if spread
            else f"a median {number(float(np.median([previous[k] for k in found])), 2)}"
        )
        parts.append(
            f"{count(len(found), 'head')} {'is a previous-token head' if len(found) == 1 else 'are previous-token heads'} "
            f"({_where(found)}), putting {weight} of {'its' if len(found) == 1 else 'their'} "
            "attention on the token just before"
        )
    text = "; ".join(parts)
    return Finding("role-heads", text[0].upper() + text[1:] + ".", "induction-vs-previous")


def active_roles(sentence_roles: Any) -> str | None:
    """The sentence page's line on which role heads are active on it: heads whose
    previous-token or duplicate-token score on this sentence reaches ``ROLE_THRESHOLD``,
    how many and the strongest (duplicate-token only where at least ``MIN_REPEATS`` of the
    sentence's tokens repeat an earlier one; else the line says why not).
    ``sentence_roles``: the sentence's ``head_roles`` table (typed or columns); None when
    the results have none (before schema version 5)."""
    if sentence_roles is None:
        return None
    cols = sentence_roles.arrays() if hasattr(sentence_roles, "arrays") else columns(sentence_roles)
    if not len(cols["head"]) or int(np.max(cols["n_queries"])) == 0:
        return None
    repeats = int(np.max(cols["n_duplicate"]))
    roles = [("previous_token", "previous-token")]
    if repeats >= MIN_REPEATS:
        roles.append(("duplicate_token", "duplicate-token"))
    parts = []
    for score, role in roles:
        values = _by_head(cols, score)
        strong = [k for k, v in values.items() if v >= ROLE_THRESHOLD]
        if strong:
            verb = "acts" if len(strong) == 1 else "act"
            median = float(np.median([values[k] for k in strong]))
            parts.append(f"{count(len(strong), 'head')} {verb} as {role} heads (median score "
                         f"{number(median, 2)})")  # fmt: skip
    named = " or ".join(role for _, role in roles)
    text = "On this sentence, " + (
        " and ".join(parts) if parts else f"no head reaches {ROLE_THRESHOLD:g} as a {named} head"
    )
    text += (
        _repeat_words(repeats)
        + f" (a head is counted when its score here reaches {ROLE_THRESHOLD:g})."
    )
    if counts_query_one(cols):
        text += (
            " These results (schema 8 or older) count the second token in the previous-token "
            "score, though its previous token is the first, where sink heads attend."
        )
    return text


def _repeat_words(repeats: int) -> str:
    """How many of a sentence's tokens repeat an earlier one, and what that allows."""
    if repeats == 0:
        return "; no token repeats an earlier one, so no head can attend to an earlier copy"
    tokens = f"{count(repeats, 'token')}, punctuation included, {'repeats' if repeats == 1 else 'repeat'} an earlier one"
    if repeats >= MIN_REPEATS:
        return f"; {tokens}"
    return (
        f"; only {tokens}, fewer than the {MIN_REPEATS} a duplicate-token score needs "
        "before a head is given that role"
    )


def role_findings(set_tables: Mapping[str, Any]) -> list[Finding]:
    """The head-role findings the results support (none before schema version 5)."""
    found = [role_heads(set_tables)]
    return [f for f in found if f is not None]
