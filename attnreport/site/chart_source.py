"""Where a site's figures come from: ``ChartSource`` (builders, encoders, image export) and
``chart_builders``, the real ones of ``attnreport.charts``, imported only when a site is
built (``site.real_charts.default_charts`` adds the workers that make pages ahead). Tests
pass their own ``ChartSource`` to ``assemble_site``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from attnreport.charts.export.figure_cache import PageFiles
from attnreport.charts.figure import Encoded, Figure
from attnreport.charts.figures.links import Pages
from attnreport.charts.registry import Placed
from attnreport.results import Results

if TYPE_CHECKING:
    from attnreport.site.context import SiteOptions
    from attnreport.site.source import SiteSource

Drawing = Callable[[], Sequence[Mapping[str, bytes]]]  # waits for a page's images


def as_bytes(value: bytes | str) -> bytes:
    return value if isinstance(value, bytes) else value.encode("utf-8")


class PagesAhead(Protocol):
    """Pages that workers make while the assembly makes the first ones (``site.ahead``)."""

    def claim(self, index: int | None) -> bool: ...

    def close(self, finished: bool = True) -> None: ...


@dataclass(frozen=True)
class ChartSource:
    """Where figures come from; defaults to ``attnreport.charts`` (see ``default_charts``)."""

    sentence_figures: Callable[[Results, int], Sequence[Placed]]
    # the index's figures, given the sentence pages they link to
    index_figures: Callable[[Results, Pages], Sequence[Placed]]
    payload: Callable[[Figure], str]  # JSON text for the page's <script> element
    chunk_files: Callable[[Figure], Mapping[str, bytes | str]]  # file name -> content
    images: Callable[[Figure], Mapping[str, bytes]]  # "svg"/"png" -> bytes
    runtime_js: Callable[[], bytes]
    # A page's images at once (cached, parallel), given whether PNGs are wanted and
    # whether to draw them in this process: starts the drawing and returns what waits
    # for it; ``images`` one by one when None.
    figure_images: Callable[[Sequence[Figure], bool, bool], Drawing] | None = None
    # A page's figures through the figure cache, given the digests of what the page may
    # read and (the index) the sentence pages it links to; ``sentence_figures`` /
    # ``index_figures`` when None.
    page_figures: Callable[[Results, int | None, PageFiles, Pages], Sequence[Placed]] | None = None
    # Workers making the last pages into the caches while this process makes the first
    # ones (``attnreport.site.ahead.start``), given the pages in order; None: none.
    ahead: Callable[[SiteSource, Sequence[int | None], SiteOptions], PagesAhead | None] | None = (
        None
    )


def chart_builders(cache: bool = True) -> ChartSource:
    """The chart builders of ``attnreport.charts`` (imported only when a site is built),
    through the user's figure cache unless ``cache`` is False; no pages made ahead.

    Intervention figures go on the page of the sentence the scaling grid was run on. A
    figure whose image export is refused (too big) or fails has no static image.
    """
    from attnreport.charts.export import embed, figure_cache
    from attnreport.charts.registry import build_figures, page_inputs

    try:
        from attnreport.charts.export.image_export import start_images
        from attnreport.charts.export.images import export_images
    except ImportError:
        export_images = start_images = None

    def images(fig: Figure) -> Mapping[str, bytes]:
        pair = export_images(fig) if export_images else None  # (svg text, png) or None
        return {"svg": as_bytes(pair[0]), "png": pair[1]} if pair else {}

    def encode(fig: Figure) -> Encoded:
        return Encoded(embed.figure_payload(fig), embed.chunk_files(fig))

    def page_figures(
        results: Results, index: int | None, files: PageFiles, pages: Pages
    ) -> list[Placed]:
        make = figure_cache.cached_maker(figure_cache.default_cache(), files, encode)
        return build_figures(page_inputs(results, index, pages), make=make)

    return ChartSource(
        sentence_figures=lambda results, index: build_figures(page_inputs(results, index)),
        index_figures=lambda results, pages: build_figures(page_inputs(results, None, pages)),
        payload=embed.figure_payload,
        chunk_files=embed.chunk_files,
        images=images,
        runtime_js=lambda: embed.runtime_js().encode("utf-8"),
        figure_images=(
            lambda figs, png, here: start_images(figs, png=png, workers=1 if here else None).result
        )
        if start_images
        else None,
        page_figures=page_figures if cache else None,
    )
