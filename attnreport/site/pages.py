"""Build the page contexts (``context``) from a results bundle and assembled figures."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attnreport
from attnreport.site import prose
from attnreport.site.context import (
    FigureContext,
    FigureInput,
    IndexContext,
    Link,
    Notes,
    PageMeta,
    Paragraph,
    SectionContext,
    SentencePageContext,
    SiteOptions,
    TokenContext,
    figure_span,
    number_figures,
    part,
    visible,
)

# (anchor, heading, words in a figure key that put the figure in this part)
PARTS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("focus", "1. What attention focuses on", ()),
    (
        "layers",
        "2. How focus changes across layers",
        ("sorted", "across", "focus", "concentration"),
    ),
    ("impact", "3. What attention changes", ("impact", "update", "magnitude")),
    ("interventions", "4. Interventions", ("interven", "scaling", "mean", "kl")),
)
TERMS = ("position", "bias", "content", "query_only")
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
CARD = (  # (label, keys tried in order, anywhere in the manifest)
    ("Model", ("model_id", "id", "name", "path")),
    ("Source", ("source",)),
    ("Architecture", ("family", "architecture")),
    ("Model type", ("model_type",)),
    ("Layers", ("n_layers", "num_layers", "num_hidden_layers")),
    ("Heads", ("n_heads", "num_heads", "num_attention_heads")),
    ("KV heads", ("n_kv_heads", "num_kv_heads", "num_key_value_heads")),
    ("Head size", ("head_dim",)),
    ("Hidden size", ("hidden_size",)),
    ("Context", ("context", "max_position_embeddings")),
    ("Positions", ("positional", "positional_scheme")),
    ("BOS token", ("bos_token",)),
    ("Attention", ("attn_implementation", "attention_implementation")),
    ("Dtype", ("dtype", "torch_dtype")),
    ("Device", ("device",)),
    ("Tokenizer", ("tokenizer_class", "tokenizer")),
    ("attnreport", ("attnreport_version",)),
    ("Revision", ("revision",)),
    ("Fingerprint", ("fingerprint", "sha256")),
)


def find(tree: Any, keys: Sequence[str]) -> Any:
    """The first scalar under any of ``keys``, searching ``tree`` breadth first."""
    level = [tree]
    while level:
        for key in keys:
            for node in level:
                if isinstance(node, Mapping) and isinstance(node.get(key), str | int | float):
                    return node[key]
        level = [
            v for n in level if isinstance(n, Mapping) for v in n.values() if isinstance(v, Mapping)
        ]
    return None


def model_card(manifest: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """(label, value) rows of the model card; rows the manifest lacks are left out."""
    out = []
    for label, keys in CARD:
        value = find(manifest, keys)
        if value is not None and value != "":
            out.append((label, visible(str(value))))
    return tuple(out)


def page_meta(results: Any, options: SiteOptions) -> PageMeta:
    """The header and footer values shared by every page."""
    name = find(part(results, "manifest") or {}, CARD[0][1])
    return PageMeta(
        site_title=visible(options.title),
        date=options.date,
        authors=tuple(visible(a) for a in options.authors),
        model_name=visible(str(name)) if name is not None else "the model",
        version=attnreport.__version__,
    )


def part_of(fig: FigureInput) -> int:
    """Which part (0-3) of a sentence page a figure belongs to, from words in its key.

    Sorted-head line charts (data with ``line`` and ``head``) always go to part 2.
    """
    key = fig.figure.key
    if {"line", "head"} <= set(fig.figure.inline):
        return 1
    for i in range(len(PARTS) - 1, 0, -1):
        if any(w in key for w in PARTS[i][2]):
            return i
    return 0


def sorted_lines(figs: Sequence[FigureContext], inputs: Sequence[FigureInput]) -> list[int]:
    """Numbers of figures that draw sorted-head lines (data with ``line`` and ``head``)."""
    by_key = {i.figure.key: i.figure for i in inputs}
    return [f.number for f in figs if {"line", "head"} <= set(by_key[f.key].inline)]


def sorted_note(numbers: Sequence[int]) -> str:
    """The footnote that says sorted-head lines are not single heads."""
    return (
        f"Lines in {figure_span(numbers)} are sorted heads: line k joins the k-th strongest "
        "head of each layer, so lines never cross; the real head is in the tooltip."
    )


def tokens_of(sentence: Mapping[str, Any]) -> tuple[TokenContext, ...]:
    """The token strip from the sentence's ``tokens`` table."""
    return tuple(
        TokenContext(
            text=visible(str(r["token"])), token_id=int(r["token_id"]), position=int(r["position"])
        )
        for r in sorted(prose.rows(sentence.get("tokens")), key=lambda r: int(r["position"]))
    )


def _paras(texts: Sequence[str], notes: Sequence[tuple[int, ...]] = ()) -> list[Paragraph]:
    notes = list(notes) + [()] * (len(texts) - len(notes))
    return [Paragraph(t, n) for t, n in zip(texts, notes, strict=True)]


def _part_texts(
    sentence: Mapping[str, Any],
    index: int,
    interventions: Any,
    notes: Notes,
    sorted_figs: list[int],
    iv_link: Link | None,
) -> list[list[Paragraph]]:
    tables = sentence.get("tables", {})
    focus = prose.rows(tables.get("focus"))
    p1 = _paras(prose.focus_summary(focus), [notes.ref("top-key", NOTES["top-key"])])
    if sentence.get("attention") is None:
        n = sentence.get("sentence", {}).get("n_tokens", "many")
        p1.insert(0, Paragraph(
            f"This sentence has {n} tokens, more than the report keeps full attention maps for "
            "(the map_tokens setting), so the attention map figure is left out; every other "
            "figure covers all of its tokens.", ()))  # fmt: skip
    split = prose.breakdown_summary(prose.rows(tables.get("breakdown")), TERMS)
    if split:
        p1.append(Paragraph(split, notes.ref("shift", NOTES["shift"])))
    p2 = _paras(prose.layers_summary(focus))
    if sorted_figs:
        p2[-1] = Paragraph(p2[-1].text, notes.ref("sorted", sorted_note(sorted_figs)))
    p3 = _paras(
        prose.impact_summary(
            prose.rows(tables.get("head_impact")), prose.rows(tables.get("block_impact"))
        ),
        [notes.ref("hidden", NOTES["hidden"])],
    )
    return [p1, p2, p3, _intervention_texts(interventions, index, notes, iv_link)]


def _intervention_texts(iv: Any, index: int, notes: Notes, figures: Link | None) -> list[Paragraph]:
    """Part 4: the effects measured on this sentence; ``figures`` links to the grids' page."""
    if not iv:
        return [Paragraph("This build has no intervention results.")]
    layer = int(iv.get("layer", 0))
    scaling, mean = iv.get("scaling") or {}, iv.get("mean") or {}
    texts = []
    if scaling and int(scaling.get("sentence", -1)) == index:
        texts.append(prose.scaling_summary(scaling, layer))
    texts.append(prose.mean_summary(mean, index, layer))
    texts = [t for t in texts if t]
    paras = []
    if texts:
        where = iv.get("where")
        note = NOTES["kl"] + (f" Interventions act on {where}." if where else "")
        paras = _paras(texts, [notes.ref("kl", note)])
    else:
        runs = {int(scaling.get("sentence", 0))} | {int(s) for s in mean.get("sentences", [])}
        paras = [Paragraph(f"The interventions in layer {layer} were run on sentences "
                           f"{prose.join_and([str(s) for s in sorted(runs)])}.")]  # fmt: skip
    if figures is not None:
        paras.append(Paragraph("The intervention figures are on the page of", link=figures))
    return paras


def sentence_page(
    results: Any,
    index: int,
    figures: Sequence[FigureInput],
    options: SiteOptions,
    prev: Link | None = None,
    next_: Link | None = None,
    interventions_page: Link | None = None,
) -> SentencePageContext:
    """The context of sentence ``index``'s page.

    ``interventions_page`` links to the page with the intervention figures (None on it).
    """
    sentence = part(results, "sentences")[index]
    groups: list[list[FigureInput]] = [[] for _ in PARTS]
    for fig in figures:
        groups[part_of(fig)].append(fig)
    numbered = number_figures(groups)
    notes = Notes()
    sorted_figs = sorted_lines([f for g in numbered for f in g], figures)
    iv = part(results, "interventions")
    texts = _part_texts(sentence, index, iv, notes, sorted_figs, interventions_page)
    sections = tuple(
        SectionContext(anchor, title, tuple(paras), figs)
        for (anchor, title, _), paras, figs in zip(PARTS, texts, numbered, strict=True)
    )
    text = str(sentence.get("sentence", {}).get("text", ""))
    return SentencePageContext(
        meta=page_meta(results, options),
        title=f"Sentence {index}",
        sentence=visible(text),
        tokens=tokens_of(sentence),
        sections=sections,
        footnotes=notes.all,
        prev=prev,
        next=next_,
        toc=tuple(Link("#" + s.anchor, s.title) for s in sections),
    )


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


def index_page(
    results: Any, figures: Sequence[FigureInput], options: SiteOptions, pages: Sequence[str]
) -> IndexContext:
    """The context of the index page; ``pages[i]`` is sentence ``i``'s file name."""
    sentences = part(results, "sentences") or []
    tables = (part(results, "set") or {}).get("tables", {})
    meta = page_meta(results, options)
    text = prose.set_summary(
        prose.rows(tables.get("focus_pooled")),
        prose.rows(tables.get("impact_pooled")),
        len(sentences),
    )
    (figs,) = number_figures([list(figures)])
    notes = Notes()
    paras = _paras(text, [notes.ref("pooled", NOTES["pooled"])] if text else [])
    numbers = sorted_lines(figs, figures)
    if numbers and paras:
        paras[-1] = Paragraph(paras[-1].text, notes.ref("sorted", sorted_note(numbers)))
    links = tuple(
        Link(href, visible(str(s.get("sentence", {}).get("text", ""))))
        for href, s in zip(pages, sentences, strict=True)
    )
    return IndexContext(
        meta=meta,
        lede=_lede(meta, len(sentences), options),
        model_card=model_card(part(results, "manifest") or {}),
        sentences=links,
        sections=(SectionContext("set", "Across the sentence set", tuple(paras), figs),),
        footnotes=notes.all,
    )
