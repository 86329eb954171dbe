"""The index page's key findings as paragraphs, each linking to the figure that shows it.

``findings.key_findings`` decides what to say; this module only places it on the page:
a link to the figure (``#figure-N`` on the index, the figure's chart anchor on the
sentence page that holds it) and the footnotes that cite the literature.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from attnreport.results.interventions import Interventions
from attnreport.site.context import FigureContext, Link, Notes, Paragraph
from attnreport.site.words.effects import NO_POST_NORM, PostNorm
from attnreport.site.words.findings import key_findings

CITATIONS = {
    "sink-onset": (
        "streamingllm",
        "Why sinks matter: Xiao et al., \u201cEfficient Streaming Language Models with "
        "Attention Sinks\u201d (StreamingLLM, ICLR 2024), show that heads park the attention "
        "they do not need on the first tokens; dropping those tokens from the cache breaks "
        "generation, and keeping a few of them lets a model run far past its training length.",
    ),
    "sink-rate": (
        "gu",
        "Gu et al., \u201cWhen Attention Sink Emerges in Language Models: An Empirical View\u201d "
        "(ICLR 2025): a head's score is the mean attention probability the first token "
        "receives over the queries that can see it, and the head is a sink when the score "
        "exceeds \u03b5 = 0.3; Sink_1^\u03b5 is the percentage of such heads. Our first-token "
        "focus counts instead the queries whose top key is the first token, and calls a head "
        "a sink by that measure when they are more than half of its queries.",
    ),
}


class Placed(Protocol):
    """Anything shown by one figure: a finding, a tested claim."""

    @property
    def figure(self) -> str: ...
    @property
    def sentence(self) -> int | None: ...


def figure_link(
    finding: Placed, figures: Sequence[FigureContext], pages: Sequence[str | None]
) -> Link | None:
    """Where the finding's figure is: ``#figure-N`` on the index, or the chart's anchor on
    the sentence page that holds it; None when that figure is not in this build.
    """
    if finding.sentence is None:
        fig = next((f for f in figures if f.key == finding.figure), None)
        return Link("#" + fig.anchor, f"See Figure {fig.label}") if fig else None
    if not 0 <= finding.sentence < len(pages) or pages[finding.sentence] is None:
        return None
    href = f"{pages[finding.sentence]}#ar-chart-{finding.figure}"
    return Link(href, f"See the figure on the page of sentence {finding.sentence}")


def finding_paragraphs(
    set_tables: Mapping[str, Any],
    interventions: Interventions | None,
    figures: Sequence[FigureContext],
    pages: Sequence[str | None],
    notes: Notes,
    post_norm: PostNorm = NO_POST_NORM,
    dim: int | None = None,
) -> tuple[Paragraph, ...]:
    """One paragraph per key finding (with the findings it holds, ``Finding.more``), with
    its figures' links and citation footnotes.

    set_tables: ``set.json``'s tables; figures: the index page's numbered figures;
    pages[i]: sentence ``i``'s file name (None: no page, no link); notes: the page's footnotes (cite in page order);
    post_norm: the model's post-attention norm, if any; dim: its hidden size (see
    ``key_findings``).
    """
    out = []
    for finding in key_findings(set_tables, interventions, post_norm, dim):
        parts = (finding, *finding.more)
        refs = tuple(r for f in parts if f.key in CITATIONS for r in notes.ref(*CITATIONS[f.key]))
        links = [link for f in parts if (link := figure_link(f, figures, pages))]
        also = tuple(Link(link.href, link.label.removeprefix("See ")) for link in links[1:])
        text = " ".join(f.text for f in parts)
        out.append(Paragraph(text, refs, links[0] if links else None, also))
    return tuple(out)
