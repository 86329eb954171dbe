"""What each page of a site is drawn from: which sentences get a page, the results
loaded for a page, and the page's figures (through the figure cache when the charts have
one). The assembly (``assemble``) and the workers that make pages ahead (``ahead``) both
go through these, so a page is the same whichever process makes it.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from attnreport.charts.export.figure_cache import PageFiles
from attnreport.charts.figures.links import Pages
from attnreport.charts.registry import (
    Placed,
    grids_sentence,
    page_inputs,
    updating_notes,
    with_notes,
)
from attnreport.errors import AttnReportError
from attnreport.page_choice import page_indices, parse_pages
from attnreport.results import Results, SentenceResults
from attnreport.site.chart_source import ChartSource
from attnreport.site.context import GRIDS, SiteOptions
from attnreport.site.slugs import sentence_filename
from attnreport.site.source import SiteSource


def grids_page(source: SiteSource, options: SiteOptions) -> int | None:
    """The sentence whose page shows the intervention grids, or their notes while they are
    being computed (``registry.grids_sentence``); None: the site has no grids."""
    if source.interventions is None and GRIDS not in options.updating:
        return None
    return grids_sentence(source.view(()))


def chosen_pages(source: SiteSource, options: SiteOptions) -> tuple[int, ...]:
    """The sentences that get a page: ``options.pages``, plus the interventions' page, of
    those with a results file (``all`` or a count: those of them that have one; an index
    without one is a one-line error naming the analysis' choice)."""
    shown = grids_page(source, options)
    keep = [shown] if shown is not None else []
    choice = parse_pages(options.pages)
    chosen = page_indices(choice, source.count, keep)
    missing = [i for i in chosen if not source.keeps(i)]
    if missing and choice.indices is not None:
        analysed = source.manifest.settings.extra.get("pages", "all")
        raise AttnReportError(
            f"--pages: sentence {missing[0]} has no page data in these results (analysed "
            f"with pages = {analysed!r}: only those sentences keep their maps)"
        )
    return tuple(i for i in chosen if source.keeps(i))


def page_files(source: SiteSource, options: SiteOptions) -> Pages:
    """(sentence, its page's file name) of every sentence with a page (``chosen_pages``):
    what the index's figures link to."""
    texts = source.texts()
    return tuple((i, sentence_filename(i, texts[i])) for i in chosen_pages(source, options))


def intervention_indices(source: SiteSource) -> list[int]:
    """The sentences the interventions ran on that have a results file (their grids name
    these sentences' tokens; the mean grid's file names those of its other inputs)."""
    iv = source.interventions
    wanted = set() if iv is None else {iv.scaling.sentence, *iv.mean.sentences}
    return [i for i in sorted(wanted) if source.keeps(i)]


def intervention_inputs(source: SiteSource) -> list[SentenceResults]:
    """The results of ``intervention_indices``' sentences."""
    return [source.sentence(i) for i in intervention_indices(source)]


def page_results(
    source: SiteSource, index: int | None, inputs: Sequence[SentenceResults] | None = None
) -> Results:
    """What page ``index`` is drawn from: its sentence and the interventions' inputs
    (``inputs``, read when not given) loaded; the index (None) reads no sentence's."""
    if index is None:
        return source.view(())
    loaded = intervention_inputs(source) if inputs is None else inputs
    return source.view([source.sentence(index), *loaded])


def placed(
    source: SiteSource,
    results: Results,
    index: int | None,
    charts: ChartSource,
    pages: Pages = (),
    updating: Collection[str] = (),
) -> Sequence[Placed]:
    """The figures of sentence ``index``'s page (the index, linking to the sentence pages
    ``pages``, when None), through the figure cache when ``charts`` has one: keyed by the
    digests of the results files they read. A figure that reads a file in ``updating``
    (being computed again) is a note in its place (``registry.updating_notes``)."""
    notes = updating_notes(page_inputs(results, index, pages), updating) if updating else []
    return with_notes(_made(source, results, index, charts, pages), notes)


def _made(
    source: SiteSource, results: Results, index: int | None, charts: ChartSource, pages: Pages
) -> Sequence[Placed]:
    if charts.page_figures is None:
        if index is None:
            return charts.index_figures(results, pages)
        return charts.sentence_figures(results, index)
    layout = source.layout
    files = PageFiles(
        digest=source.digest,
        manifest=source.manifest_digest,
        sentence=None if index is None else layout.sentence(index),
        iv_inputs=tuple(layout.sentence(i) for i in intervention_indices(source)),
        set=layout.set,
        interventions=layout.interventions,
    )
    return charts.page_figures(results, index, files, pages if index is None else ())
