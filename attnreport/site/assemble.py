"""Assemble the whole site in memory: ``{relative path: bytes}``, written by ``write``.

Layout (every link relative, so the folder works from ``file://``, GitHub Pages or any
static host)::

    index.html  404.html  s000-the-cat.html ...     pages
    assets/vega.js  assets/runtime.js  assets/style.css  assets/favicon.svg
    data/PAGE/KEY/*.js                              chunk files of figure KEY on PAGE (not
                                                    the attention map's: it loads the
                                                    results' map parts, results/sentences/
                                                    NNN/lL.js, the one copy of its rows)
    figures/PAGE/KEY.svg  figures/PAGE/KEY.png      static images (unless images=False;
                                                    the PNG only when png=True)
    results/...  results/render.json                the results drawn (their files as
                                                    read: gzip-compressed from schema 4),
                                                    and the options (every figure links
                                                    its results file)
    .nojekyll  .attnreport-site                     GitHub Pages switch, site marker

``vl_convert.javascript_bundle()`` is a classic script (no ``import``/``export``; it ends
by assigning ``window.vegaEmbed``, ``window.vega`` and ``window.vegaLite``), so it loads
from ``file://`` where ES modules do not. It is wrapped in a function so its top-level
``const``s stay private and cannot collide with ``runtime.js``.
"""

from __future__ import annotations

import functools
import re
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from typing import Any, cast

from attnreport.charts.export.svg import stable_svg_ids
from attnreport.charts.registry import Placed
from attnreport.results import Results, as_results, dump_json
from attnreport.results.layout import Layout
from attnreport.site import pages, render
from attnreport.site.ahead import Ahead
from attnreport.site.chart_source import ChartSource, Drawing, as_bytes
from attnreport.site.context import UNSTORED, FigureFiles, FigureInput, Link, Pager, SiteOptions
from attnreport.site.page_data import (
    chosen_pages,
    intervention_inputs,
    page_files,
    page_results,
    placed,
)
from attnreport.site.real_charts import default_charts
from attnreport.site.source import SiteFiles, SiteSource, from_results
from attnreport.vocabulary import MARKER, OPTIONS_FILE, RESULTS_FOLDER

_SAFE_KEY = re.compile(r"[a-z0-9][a-z0-9-]{0,79}")
_SAFE_FILE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


@functools.cache
def vega_bundle() -> bytes:
    """Vega, Vega-Lite and vega-embed as one classic script that sets window globals."""
    from attnreport.charts.export.bundle import javascript_bundle  # cached per vl-convert version

    return ("(function () {\n" + javascript_bundle() + "\n})();\n").encode()


def data_link(placed: Placed, index: int | None, layout: Layout) -> str:
    """The site's copy of the results file that a figure draws (relative to the page),
    named as the results folder names it (``layout``)."""
    return RESULTS_FOLDER + layout.source(placed.entry.source, index)


def data_title(layout: Layout) -> str:
    """The data link's tooltip: a compressed file says how to read it (a browser saves it
    rather than showing it); a plain JSON file needs none."""
    return f"{layout.format}: gunzip it to read it" if layout.compressed else ""


def _figure_files(
    page: str,
    placed: Placed,
    index: int | None,
    images: Mapping[str, bytes],
    charts: ChartSource,
    files: dict[str, bytes],
    layout: Layout,
) -> FigureInput:
    """Add one figure's chunk and image files to ``files``; return its page inputs
    (``layout``: the names of the results files it links)."""
    fig = placed.figure
    if not _SAFE_KEY.fullmatch(fig.key):
        raise ValueError(f"figure key {fig.key!r} must match [a-z0-9-] (page {page})")
    chunk_dir = None
    encoded = placed.encoded
    has_files = fig.chunks or fig.phone_spec is not None
    chunks = encoded.chunk_files if encoded else charts.chunk_files(fig) if has_files else {}
    if fig.results_chunks:
        chunk_dir = RESULTS_FOLDER  # its chunks are the results' own files (map parts)
    elif chunks:
        chunk_dir = f"data/{page}/{fig.key}/"
        for name, content in sorted(chunks.items()):
            if not _SAFE_FILE.fullmatch(name) or ".." in name:
                raise ValueError(f"unsafe chunk file name {name!r} for figure {fig.key}")
            files[chunk_dir + name] = as_bytes(content)
    paths: dict[str, str] = {}
    for kind, content in sorted(images.items()):
        if kind in ("svg", "png"):
            paths[kind] = f"figures/{page}/{fig.key}.{kind}"
            data = as_bytes(content)
            files[paths[kind]] = stable_svg_ids(data) if kind == "svg" else data
    linked = FigureFiles(
        payload=encoded.payload if encoded else charts.payload(fig),
        data=data_link(placed, index, layout),
        chunk_dir=chunk_dir,
        svg=paths.get("svg"),
        png=paths.get("png"),
        data_format=layout.format,
        data_title=data_title(layout),
    )
    return FigureInput(figure=fig, entry=placed.entry, files=linked)


def _start_images(
    figs: Sequence[Placed], charts: ChartSource, options: SiteOptions, here: bool
) -> Drawing:
    """Start drawing the static images of a page's figures; the result waits for them.
    ``here``: draw them in this process (other processes are making pages)."""
    plain = [p.figure for p in figs]
    if not options.images:
        return lambda: [{} for _ in plain]
    if charts.figure_images is not None:
        return charts.figure_images(plain, options.png_export, here)
    drawn = [{k: v for k, v in charts.images(f).items() if k == "svg" or options.png} for f in plain]  # fmt: skip
    return lambda: drawn


class _Pipeline:
    """Pages whose images are still being drawn, finished in order while later pages'
    figures are made; at most ``AHEAD`` of them wait, which bounds the memory held."""

    AHEAD = 2

    def __init__(self, depth: int = AHEAD) -> None:
        self.depth = depth
        self.waiting: deque[Callable[[], None]] = deque()

    def add(self, finish: Callable[[], None]) -> None:
        self.waiting.append(finish)
        while len(self.waiting) > self.depth:
            self.waiting.popleft()()

    def drain(self) -> None:
        while self.waiting:
            self.waiting.popleft()()


def _figures(
    page: str,
    index: int | None,
    figs: Sequence[Placed],
    charts: ChartSource,
    options: SiteOptions,
    files: dict[str, bytes],
    layout: Layout,
    here: bool = False,
) -> Callable[[], list[FigureInput]]:
    """Start a page's figures: the result waits for their images, adds the figures'
    files to ``files`` and gives the page's inputs (their data links named by ``layout``)."""
    keys = [p.figure.key for p in figs]
    if len(set(keys)) != len(keys):
        raise ValueError(f"figure keys repeat on page {page}: {keys}")
    drawing = _start_images([p for p in figs if not p.updating], charts, options, here)

    def finish() -> list[FigureInput]:
        images = iter(drawing())
        return [
            _note(p) if p.updating else _figure_files(page, p, index, next(images), charts, files, layout)
            for p in figs
        ]  # fmt: skip

    return finish


def _note(placed: Placed) -> FigureInput:
    """A note in a figure's place (``registry.updating_notes``): no chart, image or data."""
    return FigureInput(placed.figure, placed.entry, FigureFiles(payload="", data=""), True)


def options_json(options: SiteOptions) -> bytes:
    """The site options as canonical JSON (``results/render.json``). ``pages`` is left out
    when every sentence has a page, and ``rebuild`` when unknown, so sites drawn before
    those options existed keep their bytes. Where the pages sit, and the results files
    being computed again as they are drawn, are not stored (``UNSTORED``): the results
    render the same report wherever and whenever they are drawn."""
    values = {
        k: list(v) if isinstance(v, tuple) else v
        for k, v in asdict(options).items()
        if k not in UNSTORED
    }
    if values.get("pages") == "all":
        del values["pages"]
    for key in ("rebuild", "afterword"):
        if values.get(key) is None:
            values.pop(key, None)
    if not values.get("png"):
        values.pop("png_scale", None)
    if not values.get("notes"):
        values.pop("notes", None)
    return dump_json(values)


def _page(html: str) -> bytes:
    return html.encode("utf-8", "backslashreplace")


def _neighbour(names: Sequence[str | None], index: int | None) -> Link | None:
    return Link(names[index], f"Sentence {index}") if index is not None else None


def _sentence_pages(
    source: SiteSource,
    chosen: Sequence[int],
    names: Sequence[str | None],
    options: SiteOptions,
    charts: ChartSource,
    files: dict[str, bytes],
    pipeline: _Pipeline,
    ahead: Ahead | None,
) -> None:
    """Draw the chosen sentences' pages into ``files``, a few sentences in memory at a
    time (``_Pipeline``, besides the interventions' inputs); prev/next walk the chosen
    pages only. With ``ahead``, each page is claimed first (workers make the last ones)."""
    inputs = intervention_inputs(source)
    iv = source.interventions.scaling.sentence if source.interventions else None
    for k, i in enumerate(chosen):
        if ahead:
            ahead.claim(i)
        results = page_results(source, i, inputs)
        name = cast(str, names[i])  # every chosen sentence has a file name
        stem = name.removesuffix(".html")
        made = placed(source, results, i, charts, updating=options.updating)
        figs = _figures(stem, i, made, charts, options, files, source.layout, ahead is not None)
        pager = Pager(
            _neighbour(names, chosen[k - 1] if k > 0 else None),
            _neighbour(names, chosen[k + 1] if k + 1 < len(chosen) else None),
        )
        shown = iv is not None and iv != i and 0 <= iv < len(names) and names[iv]
        iv_link = Link(names[iv], f"sentence {iv}") if shown else None

        def finish(i=i, name=name, results=results, figs=figs, links=(pager, iv_link)) -> None:
            ctx = pages.sentence_page(results, i, figs(), options, *links)
            files[name] = _page(render.render_sentence(ctx))

        pipeline.add(finish)


def assemble_site(
    results: Results | Mapping[str, Any] | SiteSource,
    options: SiteOptions | None = None,
    charts: ChartSource | None = None,
) -> Mapping[str, bytes]:
    """Every file of the site as ``{relative POSIX path: bytes}``; same inputs, same bytes.

    ``results`` is typed, the four parts as JSON values (``manifest``, ``set``,
    ``sentences``, ``interventions``, parsed by ``attnreport.results``), or a
    ``SiteSource`` that loads sentences as their pages are drawn. ``options.pages``
    chooses the sentences with a page; the index and set-wide figures cover them all.
    The result is a dict, except for a folder source: a mapping whose ``results/``
    files are read from the folder when asked for.
    """
    source = results if isinstance(results, SiteSource) else from_results(as_results(results))
    options = options or SiteOptions()
    charts = charts or default_charts()
    chosen = chosen_pages(source, options)
    # Started first: it counts the cores nothing else is busy on yet.
    ahead = charts.ahead(source, [*chosen, None], options) if charts.ahead else None
    # Made while the pages are (in a child process when not cached: 1.2-1.7 s).
    pool = ThreadPoolExecutor(1)
    bundle = pool.submit(vega_bundle)
    pool.shutdown(wait=False)  # the bundle is still made; the thread ends with it
    texts = source.texts()
    names: list[str | None] = [None] * source.count
    linked = page_files(source, options)
    for i, name in linked:
        names[i] = name
    files: dict[str, bytes] = {}
    # With workers making pages, this process draws its own pages' images: it finishes
    # each page at once, so that it claims the next only when it is ready to make it.
    pipeline = _Pipeline(0 if ahead else _Pipeline.AHEAD)
    try:
        _sentence_pages(source, chosen, names, options, charts, files, pipeline, ahead)
        if ahead:
            ahead.claim(None)
        set_only = page_results(source, None)  # the index is set-wide
        made = placed(source, set_only, None, charts, linked, options.updating)
        here = ahead is not None
        figs = _figures("index", None, made, charts, options, files, source.layout, here)
        pipeline.drain()
    except BaseException:
        if ahead:
            ahead.close(finished=False)
        raise
    if ahead:
        ahead.close()
    index = pages.index_page(set_only, figs(), options, names, texts, source.files, source.layout)
    files["index.html"] = _page(render.render_index(index))
    files["404.html"] = _page(render.render_404(index.meta))
    files["assets/style.css"] = render.template_asset("style.css")
    files["assets/favicon.svg"] = render.template_asset("favicon.svg")
    files["assets/vega.js"] = bundle.result()
    files["assets/runtime.js"] = charts.runtime_js()
    files[OPTIONS_FILE] = options_json(options)
    files[".nojekyll"] = b""
    files[MARKER] = b"This folder was written by attnreport; a new build replaces it whole.\n"
    if isinstance(source.files, dict):
        files.update({RESULTS_FOLDER + name: data for name, data in source.files.items()})
        return dict(sorted(files.items()))
    return SiteFiles(files, RESULTS_FOLDER, source.files)
