"""The index's "Claims tested" section: each claim placed on the page with its figure link
and the footnote that cites who made it (``claims`` and ``claims_grid`` test them)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from attnreport.results.interventions import Interventions
from attnreport.site.context import ClaimContext, FigureContext, Notes
from attnreport.site.highlights import CITATIONS, figure_link
from attnreport.site.words.claims_grid import tested_claims

REFERENCES = {  # source key of a claim -> (footnote key, note text)
    "blog": (
        "blog",
        "Rene Claus, \u201cAttention Focus Plots\u201d (blog post): \u201cwhen attention focuses on "
        "the first token, that head has no impact on the hidden state\u201d (its Figure 10).",
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
        "replaced by its mean over the positions, for three inputs; its K row shows "
        "structured maps, not uniform ones.",
    ),
}
SOURCE_NAMES = {
    "blog": "the source blog",
    "streamingllm": "StreamingLLM (Xiao et al., ICLR 2024)",
    "gu": "Gu et al. (ICLR 2025)",
    "seeds": "the source figure (Q, K, V scaled)",
    "seed003": "the source figure (Q, K, V averaged)",
}


def claim_contexts(
    set_tables: Mapping[str, Any],
    interventions: Interventions | None,
    first_ids: Sequence[int],
    bos_added: bool,
    figures: Sequence[FigureContext],
    pages: Sequence[str | None],
    notes: Notes,
) -> tuple[ClaimContext, ...]:
    """Every claim the run tests, as the index shows it (``claims_grid.tested_claims``).

    figures: the index's numbered figures; pages[i]: sentence i's file (None: no page);
    notes: the page's footnotes, cited in page order.
    """
    out = []
    for claim in tested_claims(set_tables, interventions, first_ids, bos_added):
        ref = REFERENCES.get(claim.source)
        out.append(
            ClaimContext(
                anchor=f"claim-{claim.key}",
                hypothesis=claim.hypothesis,
                source=SOURCE_NAMES.get(claim.source, claim.source),
                verdict=claim.verdict.label,
                reason=claim.verdict.reason,
                evidence=claim.evidence,
                breakers=claim.breakers,
                link=figure_link(claim, figures, pages),
                notes=notes.ref(*ref) if ref else (),
            )
        )
    return tuple(out)
