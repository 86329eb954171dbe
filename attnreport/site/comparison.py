"""Assemble one site of several models: each model's own report under ``SLUG/`` and a
comparison index at the top (``index.html``), as ``{relative path: bytes}``.

Layout::

    index.html  404.html  assets/...            the comparison index, shared assets
    data/index/KEY/  figures/index/KEY.svg      the comparison's figures
    results/render.json  results/models.json    options; the models' results folders
    results/comparison.json                     the rows every comparison figure draws
    SLUG/index.html  SLUG/s000-....html ...     each model's report as one model's site
    SLUG/results/ ... SLUG/data/ SLUG/figures/  (``site.assemble``), its pages drawn
                                                with the shared ``../assets/`` and a
                                                link up to the index (``SiteOptions``)

With one model the site is ``site.assemble``'s, unchanged. Rendering is a pure function
of the results folders and the options (``build`` renders the folders it analysed), and
nothing here imports torch.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace

from attnreport.charts.spec.theme import CATEGORY_RANGE
from attnreport.multi import alt_text as alt
from attnreport.multi import findings, measures
from attnreport.multi.folders import models_json, unique_slugs
from attnreport.multi.measures import ModelSide, short_name
from attnreport.results import dump_json
from attnreport.site import comparison_page as cp
from attnreport.site import render
from attnreport.site.apparatus import update_sizes
from attnreport.site.assemble import assemble_site, options_json, vega_bundle
from attnreport.site.chart_source import ChartSource, as_bytes
from attnreport.site.context import FigureContext, FigureFiles, SiteOptions
from attnreport.site.page_data import chosen_pages
from attnreport.site.real_charts import default_charts
from attnreport.site.slugs import sentence_filename
from attnreport.site.source import SiteSource
from attnreport.text import display_token
from attnreport.vocabulary import MARKER, OPTIONS_FILE

SHARED = ("assets/", "404.html", ".nojekyll", MARKER)  # a model's files the top level holds
UP = ("../index.html", "All models")  # each model's pages link up to the comparison
DATA_FILE = "results/comparison.json"


class ComparisonFiles(Mapping[str, bytes]):
    """The top level's files plus every model's site under its slug, read when asked for
    (a model's shipped results stay lazy, as in ``SiteFiles``)."""

    def __init__(self, top: Mapping[str, bytes], parts: Sequence[tuple[str, Mapping[str, bytes]]]):
        self._top = dict(top)
        self._parts = {slug: files for slug, files in parts}
        names = [*self._top]
        for slug, files in parts:
            names += [f"{slug}/{n}" for n in files if not n.startswith(SHARED)]
        self._names = sorted(names)

    def __getitem__(self, name: str) -> bytes:
        if name in self._top:
            return self._top[name]
        slug, _, rest = name.partition("/")
        return self._parts[slug][rest]

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


def render_comparison(ctx: cp.ComparisonContext) -> str:
    """The comparison index's HTML (``templates/compare.html``)."""
    template = render.environment().get_template("compare.html")
    return template.render(ctx=ctx, meta=ctx.meta, charts=bool(ctx.figures))


def sides_of(sources: Sequence[SiteSource]) -> list[ModelSide]:
    """Each source as a comparison's model: its slug (unique), short name, set results."""
    slugs = unique_slugs([s.manifest.model.name for s in sources])
    names = [short_name(s.manifest) for s in sources]
    names = [n if names.count(n) == 1 else f"{n} ({slug})" for n, slug in zip(names, slugs, strict=True)]  # fmt: skip
    return [
        ModelSide(slug, name, s.manifest, s.set, s.interventions)
        for slug, name, s in zip(slugs, names, sources, strict=True)
    ]


def comparison_tables(sides: Sequence[ModelSide]) -> dict[str, dict[str, list]]:
    """The rows of every comparison figure (``results/comparison.json``)."""
    return {
        "curves": measures.curve_rows(sides),
        "roles": measures.role_count_rows(sides),
        "role_curves": measures.role_layer_rows(sides),
        "kl": measures.kl_rows(sides),
    }


def _figures(
    sides: Sequence[ModelSide],
    tables: dict[str, dict[str, list]],
    charts: ChartSource,
    options: SiteOptions,
    files: dict[str, bytes],
) -> tuple[FigureContext, ...]:
    """The comparison's figures, numbered, with their chunk and image files in ``files``."""
    from attnreport.charts.figures import comparison as figs

    models = [s.name for s in sides]
    sizes = {s.name: update_sizes(s.manifest) for s in sides}
    made = [
        (
            figs.curve_figure(
                tables["curves"], stat, models, sizes if stat == "head_impact" else None
            ),
            alt.curve_alt(tables["curves"], stat, models),
        )  # fmt: skip
        for stat in measures.CURVES
    ]
    if tables["roles"]["model"]:
        made.append((figs.roles_figure(tables["roles"], models), alt.roles_alt(tables["roles"], models)))  # fmt: skip
        curves = tables["role_curves"]
        made.append((figs.role_curves_figure(curves, models), alt.role_curves_alt(curves, models)))  # fmt: skip
    if tables["kl"]["model"]:
        kl = figs.kl_figure(tables["kl"], models, measures.depth_match(sides))
        made.append((kl, alt.kl_alt(tables["kl"], models)))
    out = []
    for number, (fig, alt_text) in enumerate(made, start=1):
        images = charts.images(fig) if options.images else {}
        svg = f"figures/index/{fig.key}.svg" if "svg" in images else None
        png = f"figures/index/{fig.key}.png" if options.png and "png" in images else None
        if svg:
            files[svg] = as_bytes(images["svg"])
        if png:
            files[png] = as_bytes(images["png"])
        out.append(
            FigureContext(
                number=number, key=fig.key, anchor=f"fig-{fig.key}", title=fig.title,
                caption=fig.caption, alt=alt_text,
                files=FigureFiles(charts.payload(fig), DATA_FILE, svg=svg, png=png),
            )
        )  # fmt: skip
    return tuple(out)


def _pages_and_tokens(
    source: SiteSource, slug: str, options: SiteOptions
) -> tuple[list[str | None], list[list[str] | None]]:
    """A model's page of each sentence (relative to the index) and, for the first
    ``SPLIT_SENTENCES`` that have a results file (``SiteSource.keeps``), its tokens."""
    chosen = set(chosen_pages(source, options))
    texts = source.texts()
    pages = [
        f"{slug}/{sentence_filename(i, texts[i])}" if i in chosen else None
        for i in range(source.count)
    ]
    tokens = [
        [str(t) for t in source.sentence(i).tokens.token]
        if i < cp.SPLIT_SENTENCES and source.keeps(i)
        else None
        for i in range(source.count)
    ]
    return pages, tokens


def code_span(token: str) -> str:
    """``token`` as a Markdown code span (shown as written, whatever its characters)."""
    shown = display_token(token)
    return f"`` {shown} ``" if "`" in shown else f"`{shown}`"


def split_notes(
    sides: Sequence[ModelSide],
    tokens: Sequence[Sequence[Sequence[str] | None]],
    notes: tuple[tuple[str, str], ...],
) -> tuple[tuple[tuple[str, str], ...], ...]:
    """Each model's sentence-page notes (Markdown, after the author's own note for the
    sentence): how the other models of the report split it; the page's own model's split
    is the token strip below the note. out[m]: model m's (sentence text, note) pairs.
    tokens[m][i]: model m's tokens of sentence i, None past ``SPLIT_SENTENCES`` (then
    only the count is given)."""
    own = dict(notes)
    out = []
    for m, side in enumerate(sides):
        mine = []
        for i, listed in enumerate(side.manifest.sentences):
            split = (
                "The models are compared on the [comparison index](../index.html#tokens). "
                f"{side.name} split this sentence into the {listed.n_tokens} tokens below"
            )
            pieces = ""
            for o, other in enumerate(sides):
                if o != m:
                    pieces = " ".join(code_span(t) for t in tokens[o][i] or ())
                    count = other.manifest.sentences[i].n_tokens
                    split += f"; {other.name} into {count}" + (f": {pieces}" if pieces else "")
            # a split listed last ends the note: a full stop after its last token, itself
            # often a full stop, would read as one more token
            split += "" if pieces else "."
            author = own.get(listed.text)
            mine.append((listed.text, f"{author}\n\n{split}" if author else split))
        out.append(tuple(mine))
    return tuple(out)


def assemble_comparison(
    sources: Sequence[SiteSource], options: SiteOptions, charts: ChartSource | None = None
) -> Mapping[str, bytes]:
    """Every file of a site of several models (``sources`` in the report's order)."""
    charts = charts or default_charts()
    sides = sides_of(sources)
    made = [_pages_and_tokens(s, side.slug, options) for s, side in zip(sources, sides, strict=True)]  # fmt: skip
    notes = split_notes(sides, [m[1] for m in made], options.notes)
    parts = []
    for side, source, mine in zip(sides, sources, notes, strict=True):
        sub = replace(
            options, title=f"{side.name}: {options.title}", notes=mine, asset_prefix="../", up=UP
        )
        parts.append((side.slug, assemble_site(source, sub, charts)))
    top: dict[str, bytes] = {}
    tables = comparison_tables(sides)
    figures = _figures(sides, tables, charts, options, top)
    colors = [CATEGORY_RANGE[i % len(CATEGORY_RANGE)] for i in range(len(sides))]
    splits = cp.split_rows(sides, [m[1] for m in made], [m[0] for m in made])
    ctx = cp.ComparisonContext(
        meta=cp.page_meta(options, sides),
        lede=cp.lede(sides),
        models=cp.model_columns(sides, colors),
        card_labels=cp.CARD_LABELS,
        findings=tuple(findings.comparisons(sides)),
        tokens_note=cp.TOKENS_NOTE,
        splits=splits,
        splits_rest=cp.split_rest(sides, [row.index for row in splits]),
        figures=figures,
        claims=tuple(findings.claim_rows(sides)),
    )
    top["index.html"] = render_comparison(ctx).encode("utf-8", "backslashreplace")
    top["404.html"] = render.render_404(ctx.meta).encode("utf-8", "backslashreplace")
    top["assets/style.css"] = render.template_asset("style.css")
    top["assets/favicon.svg"] = render.template_asset("favicon.svg")
    top["assets/vega.js"] = vega_bundle()
    top["assets/runtime.js"] = charts.runtime_js()
    top[OPTIONS_FILE] = options_json(options)
    top["results/models.json"] = models_json([f"../{s.slug}/results" for s in sides])
    top[DATA_FILE] = dump_json(tables)
    top[".nojekyll"] = b""
    top[MARKER] = b"This folder was written by attnreport; a new build replaces it whole.\n"
    return ComparisonFiles(top, parts)
