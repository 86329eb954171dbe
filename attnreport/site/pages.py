"""Build the page contexts (``context``) from a results bundle and assembled figures."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import attnreport
from attnreport.dates import report_date
from attnreport.results import Interventions, Results, SentenceResults
from attnreport.results.layout import CURRENT, Layout
from attnreport.results.pooling import POOL_WIDTH, pooled_from
from attnreport.results.roles import counts_query_one
from attnreport.results.types import sentence_tables, set_tables
from attnreport.results.view import default_head
from attnreport.site import about, apparatus, argument, highlights, methods
from attnreport.site.byte_tokens import byte_groups
from attnreport.site.context import (
    GRIDS,
    FigureContext,
    FigureInput,
    IndexContext,
    Link,
    Notes,
    PageMeta,
    Pager,
    Paragraph,
    SectionContext,
    SentencePageContext,
    SiteOptions,
    TokenContext,
    figure_span,
    number_figures,
)
from attnreport.site.markdown import markdown_html
from attnreport.site.model_card import model_card
from attnreport.site.words import lede, prose, verdicts, wording
from attnreport.site.words.alt_text import AltData
from attnreport.site.words.chat import chat_words
from attnreport.site.words.claims import ClaimInputs
from attnreport.site.words.effects import NO_POST_NORM, PostNorm
from attnreport.site.words.layer_reason import layer_reason
from attnreport.site.words.role_findings import active_roles
from attnreport.text import display_token, visible
from attnreport.vocabulary import PARTS, TERMS

TITLE_CHARS = 60  # a sentence page's title: its sentence, cut at a word boundary
NOTES = {
    "top-key": "A query's top key is the token it scores highest, and so gives the most "
    "probability; ties go to the earlier token. Statistics count queries 1 to n-1: the first "
    "token can only attend to itself.",
    "shift": "The query-only term adds the same value to every target of a query, and adding "
    "the same value to every target has no effect after softmax.",
    "hidden": "The hidden state of a token is the vector the model carries for it from layer to "
    "layer (the residual stream); every attention head adds an update to it.",
    "pooled": "Pooled values weight each sentence by its number of queries, so they equal the "
    "statistic over all queries of the set at once; the spread (lowest to highest) is taken "
    "across sentences.",
    "kl": "KL(p_base || p_modified) of the next-token distribution at each position, in nats; "
    "0 means the intervention changed nothing.",
}


def page_meta(results: Results, options: SiteOptions) -> PageMeta:
    """The header and footer values shared by every page."""
    name = results.manifest.model.name
    return PageMeta(
        site_title=visible(options.title),
        date=report_date(options.date, results.manifest.analysed),
        authors=tuple(visible(a) for a in options.authors),
        model_name=visible(name) if name else "the model",
        version=attnreport.__version__,
        asset_prefix=options.asset_prefix,
        up=Link(*options.up) if options.up else None,
    )


def with_alt(
    figs: Sequence[FigureContext], inputs: Sequence[FigureInput], data: AltData
) -> tuple[FigureContext, ...]:
    """The figures with the alt text their registry entries compute from ``data`` (kept
    empty for an entry without one); ``inputs[i]`` placed ``figs[i]``."""
    return tuple(
        replace(f, alt=i.entry.alt(data)) if i.entry.alt and not i.updating else f
        for f, i in zip(figs, inputs, strict=True)
    )


def part_of(fig: FigureInput) -> int:
    """Which part (0-3) of a sentence page a figure belongs to: its registry entry's."""
    anchors = [anchor for anchor, _ in PARTS]
    if fig.entry.part not in anchors:
        raise ValueError(f"figure {fig.figure.key} names an unknown part {fig.entry.part!r}")
    return anchors.index(fig.entry.part)


def sorted_lines(figs: Sequence[FigureContext]) -> list[int]:
    """Numbers of the figures that draw sorted-head lines (their entries say so)."""
    return [f.number for f in figs if f.sorted_lines]


def sorted_note(numbers: Sequence[int], prefix: str = "") -> str:
    """The footnote that says sorted-head lines are not single heads."""
    return (
        f"Lines in {figure_span(numbers, prefix)} are sorted heads: line k joins the k-th strongest "
        "head of each layer, so lines never cross; the real head is in the tooltip."
    )


def tokens_of(sentence: SentenceResults) -> tuple[TokenContext, ...]:
    """The token strip from the sentence's ``tokens`` table; byte pieces of one character
    drawn as that character, the pieces named in its title (``byte_tokens``)."""
    rows = sorted(prose.rows(sentence.tokens), key=lambda r: int(r["position"]))
    chips = [
        TokenContext(display_token(str(r["token"])), int(r["token_id"]), int(r["position"]))
        for r in rows
    ]
    for group in reversed(byte_groups(sentence.text, [str(r["token"]) for r in rows])):
        run = chips[group.start : group.end]
        pieces = tuple((c.token_id, c.position) for c in run)
        merged = TokenContext(display_token(group.text), run[0].token_id, run[0].position, pieces)
        chips[group.start : group.end] = [merged]
    return tuple(chips)


def _paras(texts: Sequence[str], notes: Sequence[tuple[int, ...]] = ()) -> list[Paragraph]:
    notes = list(notes) + [()] * (len(texts) - len(notes))
    return [Paragraph(t, n) for t, n in zip(texts, notes, strict=True)]


def _part_texts(
    sentence: SentenceResults,
    index: int,
    interventions: Interventions | None,
    notes: Notes,
    sorted_figs: list[int],
    iv_link: Link | None,
    hidden_size: int | None = None,
    post_norm: PostNorm = NO_POST_NORM,
    reason: str = "",
) -> list[list[Paragraph]]:
    tables = sentence.tables
    focus = prose.rows(tables.focus)
    p1 = _paras(prose.focus_summary(focus), [notes.ref("top-key", NOTES["top-key"])])
    if sentence.attention is None:
        n = sentence.n_tokens
        p1.insert(0, Paragraph(
            f"This sentence has {n} tokens, more than the report keeps full attention maps for "
            "(the map_tokens setting), so the attention map figure is left out; every other "
            "figure covers all of its tokens" + _bins_words(tables.breakdown) + ".", ()))  # fmt: skip
    split = prose.breakdown_summary(prose.rows(tables.breakdown), TERMS)
    if split:
        p1.append(Paragraph(split, notes.ref("shift", NOTES["shift"])))
    p2 = _paras(prose.layers_summary(focus))
    if sorted_figs:
        note = sorted_note(sorted_figs, f"S{index}.")
        p2[-1] = Paragraph(p2[-1].text, notes.ref("sorted", note))
    roles = active_roles(tables.head_roles)  # None for results without head roles
    if roles:
        p2.append(Paragraph(roles))
    p3 = _paras(
        prose.impact_summary(
            prose.rows(tables.head_impact),
            prose.rows(tables.block_impact),
            hidden_size,
            post_norm,
        ),
        [notes.ref("hidden", NOTES["hidden"])],
    )
    part4 = _intervention_texts(interventions, index, notes, iv_link, post_norm.present, reason)
    return [p1, p2, p3, part4]


def _intervention_texts(
    typed: Interventions | None,
    index: int,
    notes: Notes,
    figures: Link | None,
    post_norm: bool = False,
    reason: str = "",
) -> list[Paragraph]:
    """Part 4: why the interventions run in their layer (``reason``), then the effects
    measured on this sentence; ``figures`` links to the grids' page. None measured on it:
    no paragraphs (the part is left out when it has no figures).
    post_norm: the model has a post-attention norm (``prose.scaling_summary``)."""
    if typed is None:
        return []
    layer = typed.layer
    texts = [reason] if reason else []
    if typed.scaling.sentence == index:
        texts.append(prose.scaling_summary(typed.scaling, layer, post_norm))
    texts.append(prose.mean_summary(typed.mean, index, layer))
    texts = [t for t in texts if t]
    if texts == [reason]:  # nothing measured on this sentence: no part 4
        return []
    where = typed.where
    note = NOTES["kl"] + (f" Interventions act on {where}." if where else "")
    paras = _paras(texts, [notes.ref("kl", note)])
    if figures is not None:
        paras.append(Paragraph("The intervention figures are on the page of", link=figures))
    return paras


def sentence_page(
    results: Results,
    index: int,
    figures: Sequence[FigureInput],
    options: SiteOptions,
    pager: Pager | None = None,
    interventions_page: Link | None = None,
) -> SentencePageContext:
    """The context of sentence ``index``'s page.

    ``pager``: the neighbouring pages (none: a page alone); ``interventions_page`` links to
    the page with the intervention figures (None on it).
    """
    sentence = results.sentences[index]
    groups: list[list[FigureInput]] = [[] for _ in PARTS]
    for fig in figures:
        groups[part_of(fig)].append(fig)
    data = AltData(
        sentence_tables(sentence),
        sentence.n_tokens,
        {},
        results.interventions,
        default_head(sentence),
    )
    numbered = [
        with_alt(g, inputs, data)
        for g, inputs in zip(number_figures(groups, f"S{index}."), groups, strict=True)
    ]
    notes = Notes()
    sorted_figs = sorted_lines([f for g in numbered for f in g])
    texts = _part_texts(
        sentence, index, results.interventions, notes, sorted_figs, interventions_page,
        results.manifest.model.hidden_size, apparatus.post_norm(results.manifest),
        _layer_reason(results),
    )  # fmt: skip
    chat = chat_words(results.manifest, "sentence")
    if chat:  # how the sentence was read, before what attention does with it
        texts[0].insert(0, Paragraph(chat))
    sections = tuple(
        SectionContext(anchor, title, tuple(paras), figs)
        for (anchor, title), paras, figs in zip(PARTS, texts, numbered, strict=True)
        if paras or figs  # a part with nothing to show is left out, not listed
    )
    text = sentence.text
    return SentencePageContext(
        lede=_sentence_lede(results, sentence),
        meta=page_meta(results, options),
        title=wording.shorten(visible(text), TITLE_CHARS) or f"Sentence {index}",
        sentence=visible(text),
        tokens=tokens_of(sentence),
        sections=sections,
        footnotes=notes.all,
        pager=pager or Pager(),
        toc=tuple(Link("#" + s.anchor, s.title) for s in sections),
        note_html=markdown_html(dict(options.notes).get(text)),
    )


def _bins_words(breakdown: Any) -> str:
    """The words ", from position N on in bins of 32 positions" where rows pool, else ""."""
    start = pooled_from(breakdown)
    return "" if start is None else f", from position {start} on in bins of {POOL_WIDTH} positions"


def _sentence_lede(results: Results, sentence: SentenceResults) -> tuple[Paragraph, ...]:
    """What is special about this sentence (``lede.lede``), one paragraph of sentences."""
    tokens = sorted(prose.rows(sentence.tokens), key=lambda r: int(r["position"]))
    found = lede.lede(
        sentence.text,
        [str(r["token"]) for r in tokens],
        [int(r["token_id"]) for r in tokens],
        prose.rows(sentence.tables.top),
        results.set.focus_by_sentence.arrays(),
        sentence.index,
    )
    return (Paragraph(visible(" ".join(found))),) if found else ()


def _lede(meta: PageMeta, n_sentences: int, options: SiteOptions) -> tuple[Paragraph, ...]:
    if options.lede:
        return (Paragraph(options.lede),)
    return (
        Paragraph(
            f"This report opens up the attention layers of {meta.model_name} on {n_sentences} "
            "sentences: what each head looks at, how that changes from layer to layer, what "
            "attention adds to each token, and what happens when it is disturbed."
        ),
    )


def _recaptured(results: Results) -> bool:
    """Whether the set holds its sentences captured again with a BOS first."""
    table = results.set.bos_contrast
    return table is not None and len(table.sentence) > 0


def _layer_reason(results: Results) -> str:
    """Why the interventions run in their layer ("" without interventions)."""
    iv = results.interventions
    if iv is None:
        return ""
    return layer_reason(results.manifest, results.set.focus_pooled.arrays(), iv.layer)


def _older_roles(results: Results) -> bool:
    """Whether the set's head roles were written before schema 9 (previous-token over i >= 1)."""
    table = results.set.head_roles
    return table is not None and counts_query_one(table.arrays())


def index_page(
    results: Results,
    figures: Sequence[FigureInput],
    options: SiteOptions,
    pages: Sequence[str | None],
    texts: Sequence[str],
    shipped: Mapping[str, bytes],
    layout: Layout = CURRENT,
) -> IndexContext:
    """The context of the index page of ``len(texts)`` sentences.

    pages[i]: sentence ``i``'s file name, None when it has no page; texts[i]: its text;
    shipped: the results files of the site (their checksum is in the About section),
    named by ``layout``.
    ``results`` needs no sentences loaded: everything here is set-wide.
    """
    meta = page_meta(results, options)
    tables = set_tables(results.set)
    text = prose.set_summary(
        prose.rows(results.set.focus_pooled),
        prose.rows(results.set.impact_pooled),
        len(texts),
    )
    (figs,) = number_figures([list(figures)])
    figs = with_alt(figs, figures, AltData(set_tables=tables))
    notes = Notes()
    iv = results.interventions
    found = highlights.finding_paragraphs(
        tables, iv, figs, pages, notes, apparatus.post_norm(results.manifest),
        results.manifest.model.hidden_size,
    )  # fmt: skip
    inputs = ClaimInputs.of(results.set, iv, results.manifest)
    claims = argument.claim_contexts(inputs, figs, pages, notes)
    checked = argument.check_contexts(inputs, figs, pages, notes)
    paras = _paras(text, [notes.ref("pooled", NOTES["pooled"])] if text else [])
    if iv is not None:
        paras.append(Paragraph(_layer_reason(results)))
    updating = GRIDS in options.updating
    if updating:  # not "no interventions were run": they are running (serve --watch)
        paras.append(Paragraph(apparatus.GRIDS_UPDATING))
    numbers = sorted_lines(figs)
    if numbers and paras:  # on the sentence about the pooled per-layer lines it explains
        first = paras[0]
        paras[0] = Paragraph(first.text, first.notes + notes.ref("sorted", sorted_note(numbers)))
    links = tuple(Link(href, visible(t)) for href, t in zip(pages, texts, strict=True))
    checksum = about.results_checksum(shipped, layout)
    return IndexContext(
        meta=meta,
        lede=_lede(meta, len(texts), options),
        model_card=model_card(results.manifest),
        sentences=links,
        sections=(SectionContext("set", "Across the sentence set", tuple(paras), figs),),
        footnotes=notes.all,
        findings=found,
        about=about.about_rows(
            results.manifest, attnreport.__version__, checksum, options.pages, options.rebuild
        ),
        check_command=about.check_command(layout),
        pages_note=prose.pages_note(pages),
        claims=claims,
        claims_rule=verdicts.RULE if claims else "",
        checks=checked,
        model_line=visible(apparatus.model_line(results.manifest)),
        methods=methods.measures(apparatus.post_norm(results.manifest), _older_roles(results)),
        limitations=tuple(
            apparatus.limitations(
                results.manifest, results.interventions, _recaptured(results), updating
            )
        ),
        citation=apparatus.citation(
            meta.site_title, meta.authors, meta.date, results.manifest, meta.version
        ),
        lede_html=markdown_html(options.lede),
        afterword_html=markdown_html(options.afterword),
    )
