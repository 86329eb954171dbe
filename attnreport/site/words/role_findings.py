"""Findings about head roles (``set.json`` ``head_roles``, schema version 5).

Two findings, each None when the results cannot support it:
- ``role_heads``: the strongest induction head (on the probes) and the strongest
  previous-token head (on the sentences, with its range across sentences); a head is only
  named when its score reaches ``ROLE_THRESHOLD``, else the text says none does;
- ``sink_movement``: whether the sink heads (Gu et al.'s first-token score above
  ``sinks.EPS``) move anything: the share of what they write that comes from the first
  token, weighted by the values (Kobayashi et al. 2020), and their update magnitude
  against the other heads'. The verdict "move little" needs their median update to be
  under half the other heads' median; otherwise the text gives the numbers and says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from attnreport.analyses import sinks
from attnreport.analyses.role_rules import MIN_REPEATS, ROLE_THRESHOLD
from attnreport.results.roles import counts_query_one
from attnreport.site.words.fit import heads_words
from attnreport.site.words.readings import Finding, columns
from attnreport.site.words.wording import count, head_name, number

LITTLE = 0.5  # sink heads "move little" when their median update is under half the others'


def _by_head(cols: Mapping[str, Any], score: str) -> dict[tuple[int, int], float]:
    return {
        (int(a), int(b)): float(v)
        for a, b, v in zip(cols["layer"], cols["head"], cols[score], strict=True)
    }


def _strongest(scores: dict[tuple[int, int], float]) -> tuple[tuple[int, int], float]:
    """The head with the largest score; ties to the lower layer, then head."""
    key = min(scores, key=lambda k: (-scores[k], k))
    return key, scores[key]


def _spread(by_sentence: Mapping[str, Any], head: tuple[int, int], score: str) -> str:
    """``(0.41-0.93 across 6 sentences)`` for one head's per-sentence score."""
    rows = [
        float(v)
        for a, b, v, n in zip(
            by_sentence["layer"], by_sentence["head"], by_sentence[score],
            by_sentence["n_queries"], strict=True,
        )
        if (int(a), int(b)) == head and int(n) > 0
    ]  # fmt: skip
    if len(rows) < 2:
        return ""
    return f" ({number(min(rows), 2)}-{number(max(rows), 2)} across {count(len(rows), 'sentence')})"


def role_heads(set_tables: Mapping[str, Any]) -> Finding | None:
    """The strongest induction and previous-token heads, with their scores."""
    roles = columns(set_tables.get("head_roles"))
    if not roles:
        return None
    by_sentence = columns(set_tables.get("head_roles_by_sentence"))
    parts = []
    head, value = _strongest(_by_head(roles, "induction"))
    if value >= ROLE_THRESHOLD:
        parts.append(
            f"the strongest induction head is {head_name(*head)}: on 10 probes of 50 random "
            f"tokens repeated twice it puts {number(value, 2)} of its attention, on average, on "
            "the token after the earlier copy of the current one"
        )
    else:
        parts.append(f"no head reaches an induction score of {ROLE_THRESHOLD:g} on the probes "
                     f"(the largest is {number(value, 2)}, {head_name(*head)})")  # fmt: skip
    head, value = _strongest(_by_head(roles, "previous_token"))
    if value >= ROLE_THRESHOLD:
        spread = _spread(by_sentence, head, "previous_token") if by_sentence else ""
        parts.append(
            f"the strongest previous-token head is {head_name(*head)}, with {number(value, 2)} "
            f"of its attention on the token just before{spread}"
        )
    text = "; ".join(parts)
    return Finding("role-heads", text[0].upper() + text[1:] + ".", "induction-vs-previous")


def sink_movement(set_tables: Mapping[str, Any]) -> Finding | None:
    """Do the sink heads move anything? Value-weighted share and update magnitude."""
    roles = columns(set_tables.get("head_roles"))
    focus = columns(set_tables.get("focus_by_sentence"))
    impact = columns(set_tables.get("impact_pooled"))
    if not roles or "first_prob" not in focus or not impact:
        return None
    first = sinks.pooled_scores(focus, "first_prob")
    sink = sorted(k for k, v in first.items() if v > sinks.EPS)
    if not sink:
        return None
    share = _by_head(roles, "value_first_share")
    magnitude = _by_head(impact, "magnitude")
    others = [magnitude[k] for k in magnitude if k not in set(sink)]
    sink_share = np.array([share[k] for k in sink])
    sink_prob = np.array([first[k] for k in sink])
    sink_mag = float(np.median([magnitude[k] for k in sink]))
    text = (
        f"{count(len(sink), 'head').capitalize()} {'is a sink' if len(sink) == 1 else 'are sinks'}"
        f" (first-token probability above {sinks.EPS:g}; median {number(np.median(sink_prob), 2)}). "
        f"Weighted by the size of the values they carry, the first token supplies a median "
        f"{number(np.median(sink_share), 2)} of what they write "
        f"(range {number(sink_share.min(), 2)}-{number(sink_share.max(), 2)})"
    )
    if others:
        other_mag = float(np.median(others))
        verdict = (
            "they move little" if sink_mag < LITTLE * other_mag
            else "they are not quiet heads"
        )  # fmt: skip
        text += (
            f", and their median update is ||u|| / ||x|| = {number(sink_mag, 2)} against "
            f"{number(other_mag, 2)} for the other heads: {verdict}"
        )
        loud = [k for k in sink if magnitude[k] > other_mag]
        if loud and sink_mag < LITTLE * other_mag:
            text += (
                f", except {heads_words(loud)}, whose updates are larger than the other "
                "heads' median"
            )
    return Finding("sink-movement", text + ".", "head-atlas")


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
            head, value = _strongest(values)
            verb = "acts" if len(strong) == 1 else "act"
            parts.append(f"{count(len(strong), 'head')} {verb} as {role} heads (strongest: "
                         f"{head_name(*head)}, {number(value, 2)})")  # fmt: skip
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
    found = [role_heads(set_tables), sink_movement(set_tables)]
    return [f for f in found if f is not None]
