"""Typed page contexts: everything a template shows, computed from results.

Templates only lay these values out; all numbers, figure numbers, footnote numbers and
sentences about the data are decided here (text in ``prose``), so the same results give
the same pages. Text is stored raw; the templates escape it (Jinja autoescape).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING

from attnreport import vocabulary as V
from attnreport.charts.figure import Figure
from attnreport.dates import date_from_env  # noqa: F401  (re-exported)
from attnreport.site.methods import Method, method_href
from attnreport.site.words import prose
from attnreport.text import visible  # noqa: F401  (re-exported for the pages)

if TYPE_CHECKING:
    from attnreport.charts.registry import FigureEntry


@dataclass(frozen=True)
class SiteOptions:
    """What the site says that is not in the results (from config or the command line)."""

    title: str = V.TITLE
    date: str | None = None  # ISO date shown on every page; never taken from the clock
    authors: tuple[str, ...] = ()
    lede: str | None = None  # Markdown replacing the computed opening paragraph of the index
    images: bool = V.IMAGES  # a static SVG of every figure (``--no-images``: False)
    png: bool = V.PNG  # and a static PNG of every figure (``--png``)
    png_scale: float = V.PNG_SCALE  # PNG pixels per figure pixel (``--png-scale``)
    pages: str = V.PAGES  # which sentences get a page (``--pages``: all, N, or 0,5,10-12)
    rebuild: str | None = None  # the command line that built it (None: derived from results)
    afterword: str | None = None  # Markdown closing the index page
    notes: tuple[tuple[str, str], ...] = ()  # (sentence text, Markdown note for its page)
    # Where the pages sit in a larger site, set by the site that holds them (the
    # comparison puts each model's report one folder down), never stored in
    # ``render.json``: the path from a page to the folder of the shared ``assets/``, and
    # a link (href, label) shown in the header before the site's own home link.
    asset_prefix: str = field(default="", metadata={"stored": False})
    up: tuple[str, str] | None = field(default=None, metadata={"stored": False})
    # The results files being computed again while the site is drawn without them
    # (``serve --watch`` puts a save's site up before its intervention grids: "interventions"):
    # a note stands in each figure that reads one. A moment of one site, never stored either.
    updating: tuple[str, ...] = field(default=(), metadata={"stored": False})

    @property
    def png_export(self) -> bool | float:
        """What the image export's ``png`` takes: False for no PNG, else the PNG's scale."""
        return self.png_scale if self.png else False


# The results file of the intervention grids, as ``SiteOptions.updating`` names it while
# they are computed again (the figure registry's name for it: ``FigureEntry.reads``).
GRIDS = "interventions"

# The options that say where the pages sit and what is missing from them for a moment,
# not what they show: never in ``render.json``.
UNSTORED = frozenset(f.name for f in fields(SiteOptions) if f.metadata.get("stored") is False)


@dataclass(frozen=True)
class FigureFiles:
    """What a figure's page embeds and links to, relative to the page."""

    payload: str  # JSON text, already safe inside <script type="application/json">
    data: str  # relative link to the results file the figure draws
    chunk_dir: str | None = None  # relative folder with the figure's chunk files, ends in "/"
    svg: str | None = None
    png: str | None = None
    data_format: str = "JSON"  # what ``data`` holds (``Layout.format``)
    data_title: str = ""  # the data link's tooltip, when the file needs saying how to read it


@dataclass(frozen=True)
class FigureInput:
    """One figure as assembled: the builder's value plus its page-relative files."""

    figure: Figure
    entry: FigureEntry  # the registry entry that placed it (part, tables read)
    files: FigureFiles
    updating: bool = False  # a note in its place: a results file it reads is being computed


@dataclass(frozen=True)
class FigureContext:
    """A numbered figure as the page shows it."""

    number: int
    key: str
    anchor: str
    title: str
    caption: str
    files: FigureFiles
    sorted_lines: bool = False
    alt: str = ""  # what a screen reader hears: what is plotted and its main finding
    prefix: str = ""  # before the number, so figures are unique across the site ("S3.")
    method: str | None = None  # link to the definition of the figure's measure (Methods)
    note: str = ""  # a plotted quantity identically zero for the model, said in one sentence
    updating: bool = False  # no chart: ``note`` says the figure is being computed again

    @property
    def label(self) -> str:
        """The figure's name across the site: ``3`` on the index, ``S3.2`` on sentence 3."""
        return f"{self.prefix}{self.number}"


@dataclass(frozen=True)
class Paragraph:
    """Plain text followed by footnote references (numbers) and an optional link, with
    more links after it (``also``: "See Figure 2 and Figure 3")."""

    text: str
    notes: tuple[int, ...] = ()
    link: Link | None = None
    also: tuple[Link, ...] = ()


@dataclass(frozen=True)
class SectionContext:
    """A part of the study: heading, text and figures."""

    anchor: str
    title: str
    paragraphs: tuple[Paragraph, ...]
    figures: tuple[FigureContext, ...] = ()


@dataclass(frozen=True)
class TokenContext:
    """One token of the strip: visible text and its hover title."""

    text: str
    token_id: int
    position: int
    pieces: tuple[tuple[int, int], ...] = ()  # (id, position) of byte pieces drawn as one

    @property
    def title(self) -> str:
        if self.pieces:
            named = ", ".join(f"id {i} at position {p}" for i, p in self.pieces)
            return f"{len(self.pieces)} byte pieces of one character: {named}"
        return f"id {self.token_id} · position {self.position}"


@dataclass(frozen=True)
class Link:
    """A relative link with its visible label."""

    href: str | None  # None: shown as plain text (a sentence without a page)
    label: str


@dataclass(frozen=True)
class ClaimContext:
    """One tested claim as the index shows it (``site.argument``): verdict and the numbers
    behind it, the source's scope, the declared test, evidence, and the figure it is
    judged on."""

    anchor: str
    hypothesis: str
    source: str  # who made the claim, in words
    verdict: str  # supported | contradicted | inconclusive (``verdicts.VERDICTS``)
    reason: str
    evidence: str
    breakers: str  # what breaks it, in words ("" when nothing does)
    link: Link | None
    notes: tuple[int, ...] = ()
    numbers: str = ""  # the median effect and its 95% interval, in the claim's units
    scope: str = ""  # the source's scope, in words
    test: str = ""  # what each sentence's effect is, and what no effect is


@dataclass(frozen=True)
class CheckContext:
    """A property that holds by construction, checked on this run (``site.argument``)."""

    anchor: str
    property: str
    source: str
    outcome: str  # passed | failed
    evidence: str
    link: Link | None
    notes: tuple[int, ...] = ()


@dataclass(frozen=True)
class PageMeta:
    """What every page shows in its header and footer."""

    site_title: str
    date: str | None
    authors: tuple[str, ...]
    model_name: str
    version: str
    asset_prefix: str = ""  # from a page to the folder of ``assets/`` ("../" one folder down)
    up: Link | None = None  # the header's link above the site's home ("All models")


FOLD_SENTENCES = 24  # a longer sentence list is folded into a <details> on the index


@dataclass(frozen=True)
class IndexContext:
    """The index page: lede, model card, sentence list and set-wide figures."""

    meta: PageMeta
    lede: tuple[Paragraph, ...]
    model_card: tuple[tuple[str, str], ...]
    sentences: tuple[Link, ...]  # every sentence; href None: it has no page (``--pages``)
    sections: tuple[SectionContext, ...]
    footnotes: tuple[Footnote, ...] = ()
    findings: tuple[Paragraph, ...] = ()  # key findings, each linking to its figure
    about: tuple[tuple[str, str], ...] = ()  # (label, value): rebuild command, settings, checksum
    check_command: str = ""  # shell line that recomputes the results checksum
    pages_note: str = ""  # "Pages for 3 of 12 sentences ..." when not every sentence has one
    claims: tuple[ClaimContext, ...] = ()  # claims of the blog and the literature, tested
    claims_rule: str = ""  # the verdict rule, as the page states it
    checks: tuple[CheckContext, ...] = ()  # properties that hold by construction, checked
    model_line: str = ""  # the exact model under the title (id, quantisation, size, dtype)
    methods: tuple[Method, ...] = ()  # each measure's definition (figures link here)
    limitations: tuple[str, ...] = ()  # what this run cannot show, computed from it
    citation: str = ""  # BibTeX of the report
    lede_html: str = ""  # the author's lede (Markdown, raw HTML escaped); replaces ``lede``
    afterword_html: str = ""  # the author's afterword, likewise

    @property
    def sentences_folded(self) -> bool:
        """A list past ``FOLD_SENTENCES`` items opens on demand: 208 passages in full put
        the set-wide figures screens below the model card; the sentences with a page stay
        listed above it (``paged``)."""
        return len(self.sentences) > FOLD_SENTENCES

    @property
    def paged(self) -> tuple[tuple[int, Link], ...]:
        """(index, link) of every sentence that has a page."""
        return tuple((i, link) for i, link in enumerate(self.sentences) if link.href)


@dataclass(frozen=True)
class Pager:
    """A sentence page's neighbours among the pages made (None at either end)."""

    prev: Link | None = None
    next: Link | None = None


@dataclass(frozen=True)
class SentencePageContext:
    """One sentence's page: the token strip, the four parts, footnotes and navigation."""

    meta: PageMeta
    title: str
    sentence: str
    tokens: tuple[TokenContext, ...]
    sections: tuple[SectionContext, ...]
    footnotes: tuple[Footnote, ...]
    pager: Pager = field(default_factory=lambda: Pager())
    toc: tuple[Link, ...] = field(default=())
    lede: tuple[Paragraph, ...] = ()  # what is special about this sentence (``site.lede``)
    note_html: str = ""  # the author's note on this sentence (Markdown, raw HTML escaped)


@dataclass(frozen=True)
class Footnote:
    """A numbered note (``templates/partials/notes.html`` names its anchors)."""

    number: int
    text: str


class Notes:
    """Footnotes numbered in the order the page first refers to them."""

    def __init__(self) -> None:
        self._by_key: dict[str, Footnote] = {}

    def ref(self, key: str, text: str) -> tuple[int, ...]:
        """The note number to cite for ``key``; empty when the page already cited it."""
        if key in self._by_key:
            return ()
        note = Footnote(len(self._by_key) + 1, text)
        self._by_key[key] = note
        return (note.number,)

    @property
    def all(self) -> tuple[Footnote, ...]:
        return tuple(self._by_key.values())


_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")


def without_repeats(
    captions: Sequence[str],
    first_number: int = 1,
    prefix: str = "",
    kinds: Sequence[str] | None = None,
) -> list[str]:
    """The captions of consecutive figures (numbered from ``first_number``), each less the
    sentences an earlier figure of its kind (``kinds``, one per caption; None: all one
    kind) already said, which it points back to instead: a reader of Figure 6 is not told
    again what Figure 4 explained, and "read it as Figure 4" only ever names a figure
    drawn the same way (a sentence another kind of figure said is said again)."""
    said: dict[tuple[str, str], int] = {}
    out = []
    for k, caption in enumerate(captions):
        number, kind = first_number + k, "" if kinds is None else kinds[k]
        kept, earlier = [], []
        for sentence in _SENTENCE_BREAK.split(caption.strip()):
            if (kind, sentence) in said:
                earlier.append(said[kind, sentence])
            else:
                said[kind, sentence] = number
                kept.append(sentence)
        if earlier:
            kept.append(f"Otherwise read it as Figure {prefix}{min(earlier)}.")
        out.append(" ".join(kept))
    return out


def number_figures(
    groups: Sequence[Sequence[FigureInput]], prefix: str = ""
) -> list[tuple[FigureContext, ...]]:
    """Number figures 1, 2, ... across ``groups`` (the page's sections, in order), named
    ``{prefix}{n}`` (``S3.2`` on sentence 3's page); a caption leaves out what an earlier
    caption of the page, of a figure of its kind, said (``without_repeats``)."""
    items = [item for g in groups for item in g]
    captions = iter(
        without_repeats(
            [item.figure.caption for item in items],
            prefix=prefix,
            kinds=[item.entry.kind for item in items],
        )
    )
    out, n = [], 0
    for group in groups:
        figs = []
        for item in group:
            n += 1
            f = item.figure
            figs.append(
                FigureContext(
                    number=n,
                    key=f.key,
                    anchor=f"figure-{n}",
                    title=f.title,
                    caption=next(captions),
                    files=item.files,
                    sorted_lines=item.entry.sorted_lines,
                    prefix=prefix,
                    method=method_href(f.key, on_index=not prefix),
                    note=f.note,
                    updating=item.updating,
                )
            )
        out.append(tuple(figs))
    return out


def figure_span(numbers: Sequence[int], prefix: str = "") -> str:
    """``Figure 4``, ``Figures 4-6`` (consecutive) or ``Figures 2, 5 and 7``; with a prefix
    ``Figures S3.4-S3.6``."""
    nums = sorted(numbers)
    if len(nums) == 1:
        return f"Figure {prefix}{nums[0]}"
    if nums == list(range(nums[0], nums[-1] + 1)):
        return f"Figures {prefix}{nums[0]}-{prefix}{nums[-1]}"
    return "Figures " + prose.join_and([f"{prefix}{n}" for n in nums])
