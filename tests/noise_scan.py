"""What a finding must not state (issue 39, item 4): a maximum picked from a list ("departs
most", "varies most", "the strongest head"), a value interpolated between layers, a
contrast over fewer units than the stated minimum, or a number below float precision.

``stated_noise(text)`` returns every such phrase in ``text``; ``finding_text(html)`` the
text of a page's findings: its lede, key findings, set-wide text, claims and the
comparison's findings, and on a sentence page every part but the interventions (their
words belong to the grids: a grid picks among a designed handful of cells).
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

# "most" as a superlative after a verb and its object ("changes the hidden state most"),
# never the quantifier ("most heads", "for most queries", "at most 0.1")
_VERB_MOST = re.compile(
    r"\b(?:depart|departs|vary|varies|differ|differs|change|changes|move|moves)\b"
    r"(?:(?![.;:]).){0,50}?(?<!\bat )\bmost\b(?!\s+(?:heads?|quer(?:y|ies)|tokens?|layers?|of)\b)",
    re.IGNORECASE,
)
PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("a maximum picked from a list", _VERB_MOST),
    ("a maximum picked from a list", re.compile(r"\b(?:strongest|most decided)\b", re.I)),
    ("a maximum picked from a list", re.compile(r"\bthe (?:head|layer) with the largest\b", re.I)),
    ("an interpolated value", re.compile(r"\binterpolated\b", re.I)),
    ("a contrast over too few units", re.compile(r"\bon its [1-5] full-attention layers?\b")),
    ("a number below float precision", re.compile(r"\b\d(?:\.\d+)?e-(?:0?[7-9]|[1-9]\d) nats?\b")),
)


def stated_noise(text: str) -> list[tuple[str, str]]:
    """(what kind, the phrase) of every statement in ``text`` that ``PATTERNS`` forbids."""
    return [(kind, m.group(0)) for kind, p in PATTERNS for m in p.finditer(text)]


FINDING_IDS = ("findings", "claims", "lede", "set", "focus", "layers", "impact")
SKIPPED_IDS = ("interventions",)


class _Findings(HTMLParser):
    """Collects the text inside elements whose id is in ``FINDING_IDS`` (or inside a
    ``div.lede``), leaving out anything inside an id of ``SKIPPED_IDS`` and scripts."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []  # "keep", "skip" or "" per open element
        self.parts: list[str] = []

    def handle_starttag(self, tag: str, attrs) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag in ("br", "img", "meta", "link", "input", "hr", "wbr", "source"):
            return
        mark = ""
        if a.get("id") in SKIPPED_IDS or tag in ("script", "style", "figure", "svg"):
            mark = "skip"
        elif a.get("id") in FINDING_IDS or "lede" in a.get("class", "").split():
            mark = "keep"
        self.stack.append(mark)

    def handle_endtag(self, tag: str) -> None:
        if tag in ("br", "img", "meta", "link", "input", "hr", "wbr", "source"):
            return
        if self.stack:
            self.stack.pop()

    def handle_data(self, data: str) -> None:
        if "skip" in self.stack:
            return
        if "keep" in self.stack:
            self.parts.append(data)


def finding_text(html: str) -> str:
    """The findings' text of one page (see the module docstring)."""
    parser = _Findings()
    parser.feed(html)
    return re.sub(r"\s+", " ", " ".join(parser.parts))
