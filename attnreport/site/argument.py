"""The index's "Claims tested" section: each claim and check placed on the page with the
link to the figure it is judged on and the footnote that cites who made it (the
``words.claims`` package tests them)."""

from __future__ import annotations

from collections.abc import Sequence

from attnreport.charts.registry import entry_of
from attnreport.site.context import CheckContext, ClaimContext, FigureContext, Link, Notes
from attnreport.site.highlights import CITATIONS, figure_link
from attnreport.site.words.claims import Check, Claim, ClaimInputs, checks, tested_claims
from attnreport.site.words.verdicts import FAILED, PASSED

REFERENCES = {  # source key of a claim -> (footnote key, note text)
    "blog": (
        "blog",
        "Rene Claus, \u201cAttention Focus Plots\u201d (blog post): \u201cFor layers 4 and "
        "later, when attention focuses on the first token, that head has no impact on the "
        "hidden state\u201d (its Figure 10).",
    ),
    "streamingllm": CITATIONS["sink-onset"],
    "gu": CITATIONS["sink-rate"],
    "seeds": (
        "seeds",
        "The source figure \u201cThe Attention Weight after Modifying Query, Key and Value\u201d: "
        "Q, K or V of one layer multiplied by \u03b5 = 5e-1, 1e-3, 1e-10.",
    ),
    "seed003": (
        "seed003",
        "The source figure \u201cThe Mean Operation For Query, Key and Value\u201d: Q, K or V "
        "replaced by its mean over the positions, for three inputs; its K row shows a "
        "diagonal band, not uniform maps.",
    ),
}
SOURCE_NAMES = {
    "blog": "the source blog",
    "streamingllm": "StreamingLLM (Xiao et al., ICLR 2024)",
    "gu": "Gu et al. (ICLR 2025)",
    "seeds": "the source figure (Q, K, V scaled)",
    "seed003": "the source figure (Q, K, V averaged)",
}


def _link(
    found: Claim | Check, figures: Sequence[FigureContext], pages: Sequence[str | None]
) -> Link | None:
    """The link to the figure a claim or check is judged on: None when that figure is not
    drawn in this build (not on the index, or a sentence figure no module registers)."""
    if found.sentence is not None and entry_of(found.figure) is None:
        return None
    return figure_link(found, figures, pages)


def _placed(
    found: Claim | Check,
    figures: Sequence[FigureContext],
    pages: Sequence[str | None],
    notes: Notes,
) -> dict:
    """What a claim and a check share on the page: who made it, the link to its figure and
    the footnote citing the source."""
    ref = REFERENCES.get(found.source)
    return {
        "source": SOURCE_NAMES.get(found.source, found.source),
        "link": _link(found, figures, pages),
        "notes": notes.ref(*ref) if ref else (),
    }


def claim_contexts(
    inputs: ClaimInputs,
    figures: Sequence[FigureContext],
    pages: Sequence[str | None],
    notes: Notes,
) -> tuple[ClaimContext, ...]:
    """Every claim the run tests, as the index shows it (``claims.tested_claims``).

    figures: the index's numbered figures; pages[i]: sentence i's file (None: no page);
    notes: the page's footnotes, cited in page order.
    """
    return tuple(
        ClaimContext(
            anchor=f"claim-{c.key}", hypothesis=c.hypothesis, verdict=c.verdict.label,
            reason=c.verdict.reason, evidence=c.evidence, breakers=c.breakers,
            numbers=c.numbers, scope=c.scope, test=c.test, **_placed(c, figures, pages, notes),
        )
        for c in tested_claims(inputs)
    )  # fmt: skip


def check_contexts(
    inputs: ClaimInputs,
    figures: Sequence[FigureContext],
    pages: Sequence[str | None],
    notes: Notes,
) -> tuple[CheckContext, ...]:
    """Every check the run makes (``claims.checks``), as the index shows it."""
    return tuple(
        CheckContext(
            anchor=f"check-{c.key}", property=c.property, evidence=c.evidence,
            outcome=PASSED if c.passed else FAILED, **_placed(c, figures, pages, notes),
        )
        for c in checks(inputs)
    )  # fmt: skip
