"""Assemble the whole site in memory: ``{relative path: bytes}``, written by ``write``.

Layout (every link relative, so the folder works from ``file://``, GitHub Pages or any
static host)::

    index.html  404.html  s000-the-cat.html ...     pages
    assets/vega.js  assets/runtime.js  assets/style.css
    data/PAGE/KEY/*.js                              chunk files of figure KEY on PAGE
    figures/PAGE/KEY.svg  figures/PAGE/KEY.png      static images (unless images=False)
    .nojekyll  .attnreport-site                     GitHub Pages switch, site marker

``vl_convert.javascript_bundle()`` is a classic script (no ``import``/``export``; it ends
by assigning ``window.vegaEmbed``, ``window.vega`` and ``window.vegaLite``), so it loads
from ``file://`` where ES modules do not. It is wrapped in a function so its top-level
``const``s stay private and cannot collide with ``runtime.js``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from attnreport.charts.figure import Figure
from attnreport.charts.svg import stable_svg_ids
from attnreport.site import pages, render
from attnreport.site.context import FigureInput, Link, SiteOptions, part
from attnreport.site.slugs import sentence_filename

MARKER = ".attnreport-site"
_SAFE_KEY = re.compile(r"[a-z0-9][a-z0-9-]{0,79}")
_SAFE_FILE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


@dataclass(frozen=True)
class ChartSource:
    """Where figures come from; defaults to ``attnreport.charts`` (see ``default_charts``)."""

    sentence_figures: Callable[[Any, int], Sequence[Figure]]
    index_figures: Callable[[Any], Sequence[Figure]]
    payload: Callable[[Figure], str]  # JSON text for the page's <script> element
    chunk_files: Callable[[Figure], Mapping[str, bytes | str]]  # file name -> content
    images: Callable[[Figure], Mapping[str, bytes]]  # "svg"/"png" -> bytes
    runtime_js: Callable[[], bytes]
    # Every figure's images at once (cached, parallel); ``images`` one by one when None.
    figure_images: Callable[[Sequence[Figure]], Sequence[Mapping[str, bytes]]] | None = None


def intervention_page(results: Any) -> int | None:
    """The sentence whose page shows the intervention figures (``scaling.sentence``)."""
    iv = part(results, "interventions") or {}
    scaling = iv.get("scaling") or {}
    return int(scaling["sentence"]) if "sentence" in scaling else None


def default_charts() -> ChartSource:
    """The chart builders of ``attnreport.charts`` (imported only when a site is built).

    Intervention figures go on the page of the sentence the scaling grid was run on. A
    figure whose image export is refused (too big) or fails has no static image.
    """
    from attnreport import charts
    from attnreport.charts import embed

    try:
        from attnreport.charts.image_export import figure_images
        from attnreport.charts.images import export_images
    except ImportError:
        export_images = figure_images = None

    def images(fig: Figure) -> Mapping[str, bytes]:
        pair = export_images(fig) if export_images else None  # (svg text, png) or None
        return {"svg": _text(pair[0]), "png": pair[1]} if pair else {}

    def sentence_figures(results: Any, index: int) -> Sequence[Figure]:
        sentences = list(part(results, "sentences"))
        iv = part(results, "interventions") if intervention_page(results) == index else None
        manifest = part(results, "manifest") or {}
        return charts.sentence_figures(sentences[index], iv, manifest, sentences)

    def index_figures(results: Any) -> Sequence[Figure]:
        manifest = part(results, "manifest") or {}
        return charts.index_figures(part(results, "set") or {}, manifest,
                                    list(part(results, "sentences") or []))  # fmt: skip

    return ChartSource(
        sentence_figures=sentence_figures,
        index_figures=index_figures,
        payload=embed.figure_payload,
        chunk_files=embed.chunk_files,
        images=images,
        runtime_js=lambda: embed.runtime_js().encode("utf-8"),
        figure_images=figure_images,
    )


@functools.cache
def vega_bundle() -> bytes:
    """Vega, Vega-Lite and vega-embed as one classic script that sets window globals."""
    from attnreport.charts.bundle import javascript_bundle  # cached per vl-convert version

    return ("(function () {\n" + javascript_bundle() + "\n})();\n").encode()


def _text(value: bytes | str) -> bytes:
    return value if isinstance(value, bytes) else value.encode("utf-8")


def _figure_files(
    page: str,
    fig: Figure,
    images: Mapping[str, bytes],
    charts: ChartSource,
    files: dict[str, bytes],
) -> FigureInput:
    """Add one figure's chunk and image files to ``files``; return its page inputs."""
    if not _SAFE_KEY.fullmatch(fig.key):
        raise ValueError(f"figure key {fig.key!r} must match [a-z0-9-] (page {page})")
    chunk_dir = None
    chunks = charts.chunk_files(fig) if fig.chunks else {}
    if chunks:
        chunk_dir = f"data/{page}/{fig.key}/"
        for name, content in sorted(chunks.items()):
            if not _SAFE_FILE.fullmatch(name) or ".." in name:
                raise ValueError(f"unsafe chunk file name {name!r} for figure {fig.key}")
            files[chunk_dir + name] = _text(content)
    paths: dict[str, str] = {}
    for kind, content in sorted(images.items()):
        if kind in ("svg", "png"):
            paths[kind] = f"figures/{page}/{fig.key}.{kind}"
            data = _text(content)
            files[paths[kind]] = stable_svg_ids(data) if kind == "svg" else data
    return FigureInput(
        figure=fig,
        payload=charts.payload(fig),
        chunk_dir=chunk_dir,
        svg=paths.get("svg"),
        png=paths.get("png"),
    )


def _figures(
    page: str,
    figs: Sequence[Figure],
    charts: ChartSource,
    options: SiteOptions,
    files: dict[str, bytes],
) -> list[FigureInput]:
    keys = [f.key for f in figs]
    if len(set(keys)) != len(keys):
        raise ValueError(f"figure keys repeat on page {page}: {keys}")
    if not options.images:
        images: Sequence[Mapping[str, bytes]] = [{} for _ in figs]
    elif charts.figure_images is not None:
        images = charts.figure_images(figs)
    else:
        images = [charts.images(f) for f in figs]
    return [_figure_files(page, f, im, charts, files) for f, im in zip(figs, images, strict=True)]


def _page(html: str) -> bytes:
    return html.encode("utf-8", "backslashreplace")


def assemble_site(
    results: Any, options: SiteOptions | None = None, charts: ChartSource | None = None
) -> dict[str, bytes]:
    """Every file of the site as ``{relative POSIX path: bytes}``; same inputs, same bytes.

    ``results`` holds ``manifest``, ``set``, ``sentences`` (list, by index) and
    ``interventions`` as attributes or mapping keys (see ``docs/results-schema.md``).
    """
    options = options or SiteOptions()
    charts = charts or default_charts()
    sentences = part(results, "sentences") or []
    names = [
        sentence_filename(i, str(s.get("sentence", {}).get("text", "")))
        for i, s in enumerate(sentences)
    ]
    files: dict[str, bytes] = {}
    for i, name in enumerate(names):
        stem = name.removesuffix(".html")
        figs = _figures(stem, charts.sentence_figures(results, i), charts, options, files)
        prev = Link(names[i - 1], f"Sentence {i - 1}") if i > 0 else None
        nxt = Link(names[i + 1], f"Sentence {i + 1}") if i + 1 < len(names) else None
        iv = intervention_page(results)
        iv_link = (
            Link(names[iv], f"sentence {iv}")
            if iv is not None and iv != i and 0 <= iv < len(names)
            else None
        )
        ctx = pages.sentence_page(results, i, figs, options, prev, nxt, iv_link)
        files[name] = _page(render.render_sentence(ctx))
    figs = _figures("index", charts.index_figures(results), charts, options, files)
    index = pages.index_page(results, figs, options, names)
    files["index.html"] = _page(render.render_index(index))
    files["404.html"] = _page(render.render_404(index.meta))
    files["assets/style.css"] = render.template_asset("style.css")
    files["assets/vega.js"] = vega_bundle()
    files["assets/runtime.js"] = charts.runtime_js()
    files[".nojekyll"] = b""
    files[MARKER] = b"This folder was written by attnreport; a new build replaces it whole.\n"
    return dict(sorted(files.items()))
