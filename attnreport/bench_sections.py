"""The seven measured sections of BENCHMARKS.md and the profile; ``bench.py`` runs them.

Every section takes the shared ``Context`` and returns a ``bench_report.Section``
with its tables and the targets it judged (judged only outside quick mode).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from attnreport.bench_measure import capture_timings, grid_timings, intervention_layer
from attnreport.bench_report import Section, Target, mib, ratio_target, seconds
from attnreport.bench_workers import WorkerRun, run_worker
from attnreport.session import Session, open_session
from attnreport.study import Settings

REPO = Path(__file__).resolve().parent.parent
EXAMPLE_CONFIG = REPO / "attnreport.toml"
TITLES = {
    "capture": "1. Capture, decomposition and focus statistics vs the model's own pass",
    "interventions": "2. Interventions",
    "load": "3. Model load",
    "build": "4. Example report build",
    "scaling": "5. Sequence-length scaling",
    "pages": "6. Page weight and render time",
    "bertviz": "7. bertviz beside our page",
}


@dataclass
class Context:
    """What the sections share: options, a scratch folder, the loaded model, built sites."""

    quick: bool
    repeats: int
    work: Path
    sentences_file: Path | None  # None: the built-in sentence set
    bertviz_python: str | None
    session: Session | None = None
    pages: dict[int, dict[str, Any]] = field(default_factory=dict)  # tokens -> page facts
    sites: dict[str, Path] = field(default_factory=dict)  # name -> built site folder
    warm_stages: dict[str, float] = field(default_factory=dict)  # section 4, warm build
    page_stage_s: float = 0.0  # charts and pages stage of the section 6 site
    page_build_error: str = ""  # why the section 6 site failed with default settings

    def loaded(self) -> Session:
        """The default model with the bench's sentences, loaded once in this process."""
        if self.session is None:
            file = str(self.sentences_file) if self.sentences_file else None
            self.session = open_session("default", file)
        return self.session


def ms(value: float) -> str:
    return f"{value * 1000:.1f} ms"


def capture_section(ctx: Context) -> Section:
    """1. Our capture + decomposition + focus statistics vs output_attentions=True."""
    section = Section(TITLES["capture"])
    timings = capture_timings(ctx.loaded(), ctx.repeats)
    section.add(
        "Per sentence, in one process and one run: the model's own forward pass with "
        "`output_attentions=True` (eager attention) against `capture_attention` followed, for "
        "every layer of `Capture.records()` (with the score terms), by `key_order` and "
        f"`focus_table`. After one warm-up call of each, they run back to back {ctx.repeats} times, "
        "so each pair sees the same machine load; the ratio is the median of the per-pair ratios "
        "(judged), the best-case ratio is fastest over fastest.",
        "",
    )
    rows = [
        (
            t.index,
            t.n_tokens,
            ms(statistics.median(t.model)),
            ms(statistics.median(t.ours)),
            f"{t.ratio:.2f}x",
            f"{t.best_ratio:.2f}x",
        )
        for t in timings
    ]
    header = (
        "Sentence",
        "Tokens",
        "Model pass (median)",
        "Capture + focus (median)",
        "Ratio",
        "Best-case ratio",
    )
    section.table(header, rows)
    ratios = [t.ratio for t in timings]
    section.add(f"Median ratio {statistics.median(ratios):.2f}x, worst {max(ratios):.2f}x.", "")
    section.judge(
        ratio_target(
            "Capture + focus vs model pass (worst sentence)", max(ratios), 1.5, "x", not ctx.quick
        )
    )
    return section


def interventions_section(ctx: Context) -> Section:
    """2. The scaling and mean grids as multiples of one plain forward pass."""
    section = Section(TITLES["interventions"])
    session, settings = ctx.loaded(), Settings()
    layer = intervention_layer(session, settings)
    grids = grid_timings(session, settings, layer, ctx.repeats)
    n_layers = len(session.specs)
    section.add(
        f"At layer {layer} of {n_layers} (the strongest pooled first-token focus, as `run_study` "
        f"picks it), epsilons {list(settings.epsilons)}. A pass's unit is one plain forward "
        "pass of the model on the same input (`use_cache=False`, no hooks). Each of "
        f"{ctx.repeats} repeats runs the grid, then the same passes as plain forward passes; the "
        "cost is the median over repeats of grid time / (plain time / passes), best-case is "
        "fastest over fastest; times are medians. Attention modules executed are counted with a pre-hook: "
        "a block replayed from the unmodified pass runs none, so the count shows the replay.",
        "",
    )
    rows = []
    for g in grids:
        replayed = g.passes * n_layers - g.attention_calls
        rows.append(
            (
                g.name,
                g.passes,
                f"{g.attention_calls} of {g.passes * n_layers} ({replayed} replayed)",
                seconds(g.seconds),
                seconds(statistics.median(g.plain)),
                f"{g.multiple:.2f} passes",
                f"{g.best_multiple:.2f} passes",
            )
        )
    header = (
        "Grid",
        "Passes",
        "Attention modules executed",
        "Grid time",
        "Same passes, plain",
        "Cost",
        "Best-case cost",
    )
    section.table(header, rows)
    for g in grids[:2]:
        section.judge(
            ratio_target(
                f"{g.name} cost (passes of {g.passes})",
                g.multiple,
                g.passes,
                "passes",
                not ctx.quick,
            )
        )
    return section


def _load_row(label: str, run: WorkerRun) -> tuple:
    r = run.result
    return (
        label,
        seconds(run.wall_s),
        seconds(r["import_s"]),
        seconds(r["in_process_s"]),
        mib(r["peak_rss_mb"]),
    )


def load_section(ctx: Context) -> Section:
    """3. Default model load: GGUF first load (fresh cache) vs cached load, from process start."""
    section = Section(TITLES["load"])
    cache = ctx.work / "cache-load"
    env = {} if ctx.quick else {"ATTNREPORT_CACHE": str(cache)}
    first = None if ctx.quick else run_worker("load", {}, env)
    cached = [run_worker("load", {}, env) for _ in range(ctx.repeats)]
    median = sorted(cached, key=lambda run: run.wall_s)[len(cached) // 2]
    section.add(
        "Each load is a new process (`python -m attnreport.bench_workers load`) timed by the "
        "parent from start to exit, so interpreter start and imports count. "
        + (
            "Quick mode: no cold first load (it dequantises the GGUF, about 40 s); the cached "
            "load used the existing cache."
            if ctx.quick
            else f"The first load had a fresh, empty `ATTNREPORT_CACHE` (it dequantises the GGUF "
            f"and writes the cache entry); the cached loads reuse it (median of {ctx.repeats})."
        ),
        "",
    )
    rows = [] if first is None else [_load_row("first load (GGUF, empty cache)", first)]
    rows += [_load_row(f"cached load {i + 1}", run) for i, run in enumerate(cached)]
    section.table(("Run", "Wall from process start", "Imports", "In process", "Peak RSS"), rows)
    section.judge(
        ratio_target(
            "Cached model load, from process start", median.wall_s, 3.0, "s", not ctx.quick
        )
    )
    return section


def _build_args(ctx: Context, out: Path) -> dict[str, Any]:
    if ctx.quick:
        overrides = {"out": str(out), "sentences": str(ctx.sentences_file), "images": False}
        return {"config": None, "overrides": overrides}
    return {"config": str(EXAMPLE_CONFIG), "overrides": {"out": str(out)}}


def _build_rows(runs: dict[str, WorkerRun]) -> list[tuple]:
    """One row per stage, then process start + imports and the wall total; a column per run."""
    stages = list(dict.fromkeys(s for run in runs.values() for s in run.result["stages"]))
    rows = [
        (stage, *(seconds(run.result["stages"].get(stage, 0.0)) for run in runs.values()))
        for stage in stages
    ]
    overhead = [run.wall_s - sum(run.result["stages"].values()) for run in runs.values()]
    rows.append(("imports and process start", *map(seconds, overhead)))
    rows.append(("**total (wall)**", *(seconds(run.wall_s) for run in runs.values())))
    return rows


def build_section(ctx: Context) -> Section:
    """4. The example report end to end, cold and warm cache, split by stage."""
    section = Section(TITLES["build"])
    out, env = ctx.work / "site-example", {"ATTNREPORT_CACHE": str(ctx.work / "cache-build")}
    runs = {}
    if not ctx.quick:
        runs["Cold cache"] = run_worker("build", _build_args(ctx, out), env)
    runs["Warm cache"] = warm = run_worker("build", _build_args(ctx, out), {} if ctx.quick else env)
    ctx.sites["example"], ctx.warm_stages = out, warm.result["stages"]
    what = (
        "Quick mode: two short sentences, no images, one build on the existing model cache."
        if ctx.quick
        else "The example report: `attnreport.toml` at the repository root (built-in sentences, images on)."
    )
    section.add(
        f"{what} Each build is `build_site` in a new process (`python -m attnreport.bench_workers build`), "
        "the same call `attnreport build --config attnreport.toml --out DIR --force` makes; wall time "
        "from process start. Cold: an empty `ATTNREPORT_CACHE` (the GGUF is dequantised first); warm: "
        "the same cache again.",
        "",
    )
    section.table(("Stage", *runs), _build_rows(runs))
    stages = warm.result["stages"]
    top = max(stages, key=stages.get)
    r = warm.result
    section.add(
        f"The warm build is dominated by **{top}** ({stages[top] / warm.wall_s:.0%} of the wall time). "
        f"Site: {r['pages']} pages, {r['figures']} figures, {r['files']} files, {r['bytes'] / 1e6:.1f} MB; "
        f"peak RSS {mib(r['peak_rss_mb'])}.",
        "",
    )
    section.judge(
        ratio_target("Warm example build with images", warm.wall_s, 30.0, "s", not ctx.quick, 1)
    )
    return section


def scaling_section(ctx: Context, lengths: tuple[int, ...]) -> Section:
    """5. ``analyze_sentence`` time and peak RSS at growing lengths, one process each."""
    section = Section(TITLES["scaling"])
    runs = [run_worker("scale", {"n_tokens": n}) for n in lengths]
    section.add(
        "`analyze_sentence` on the default model for a sentence of exactly N tokens (the bench "
        "prose, repeated as needed), each length in its own process. Peak RSS is "
        "`resource.getrusage(RUSAGE_SELF).ru_maxrss` at the end; it includes the loaded model "
        f"(RSS after loading shown beside it). Attention maps are kept up to {Settings().map_tokens} "
        "tokens (`map_tokens`), so longer sentences skip the per-head n x n triangles.",
        "",
    )
    rows = [
        (
            r.result["n_tokens"],
            seconds(r.result["analyze_s"]),
            mib(r.result["peak_rss_mb"]),
            mib(r.result["rss_after_load_mb"]),
            "yes" if r.result["maps_kept"] else "no",
        )
        for r in runs
    ]
    section.table(("Tokens", "analyze_sentence", "Peak RSS", "RSS after load", "Maps kept"), rows)
    longest = runs[-1].result
    judged = not ctx.quick and longest["n_tokens"] == 1024
    section.judge(
        ratio_target(
            f"{longest['n_tokens']} tokens: time", longest["analyze_s"], 60.0, "s", judged, 1
        )
    )
    section.judge(
        ratio_target(
            f"{longest['n_tokens']} tokens: peak RSS",
            longest["peak_rss_mb"] / 1024,
            4.0,
            "GiB",
            judged,
        )
    )
    return section


def sentence_page(site: Path, index: int) -> Path:
    """The page of sentence ``index`` in a built site (``sNNN-slug.html``)."""
    return next(site.glob(f"s{index:03d}-*.html"))


def _page_site(ctx: Context, lengths: tuple[int, ...]) -> tuple[Path, dict[str, Any]]:
    """A ``--no-images`` site whose sentence i has lengths[i] tokens (quick: the example site)."""
    if ctx.quick:
        return ctx.sites["example"], {"stages": ctx.warm_stages}
    from attnreport.bench_inputs import text_of_tokens

    tokenizer = ctx.loaded().loaded.tokenizer
    file = ctx.work / "page-sentences.txt"
    file.write_text("".join(text_of_tokens(tokenizer, n) + "\n" for n in lengths), encoding="utf-8")
    out = ctx.work / "site-pages"
    overrides = {"out": str(out), "sentences": str(file), "images": False}
    try:
        return out, run_worker("build", {"config": None, "overrides": overrides}).result
    except RuntimeError as err:  # e.g. a sentence longer than map_tokens breaks the charts
        ctx.page_build_error = str(err).rsplit("|", 1)[-1].strip()
    overrides["map_tokens"] = max(lengths)
    return out, run_worker("build", {"config": None, "overrides": overrides}).result


def _page_row(n: int, facts: dict[str, Any]) -> tuple:
    load = facts["load"]
    drawn = load.charts - load.failed_charts
    return (
        n,
        f"{drawn} of {load.charts}",
        f"{load.first_draw_ms:.0f} ms",
        f"{load.all_drawn_ms:.0f} ms",
        f"{load.start_bytes / 1e6:.3f} MB ({', '.join(load.start_files)})",
        f"{facts['total'] / 1e6:.2f} MB",
        len(load.errors),
    )


def pages_section(ctx: Context, lengths: tuple[int, ...]) -> Section:
    """6. Bytes before first draw, bytes per page and time until every chart drew."""
    from attnreport.bench_browser import chromium, folder_bytes, median_load, page_bytes

    section = Section(TITLES["pages"])
    site, build = _page_site(ctx, lengths)
    ctx.page_stage_s = build["stages"].get("charts and pages", 0.0)
    with chromium() as browser:
        for i, n in enumerate(lengths):
            page = sentence_page(site, i)
            load = median_load(browser, page, ctx.repeats)
            ctx.pages[n] = {"load": load, "total": page_bytes(site, page.name), "path": page}
    bundle = next(iter(ctx.pages.values()))["load"].bundle_bytes
    section.add(
        f"A site built without images (`--no-images`) from sentences of {', '.join(map(str, lengths))} "
        "tokens, each page opened from `file://` in headless Chromium with every other request "
        "aborted, a fresh browser context per load (median of "
        f"{ctx.repeats} loads by all-drawn time). Times are from navigation start until the chart runtime "
        "set `data-rendered` on the first and on every `.ar-chart`. *Before first draw* is the "
        "HTML plus every file requested before the first chart drew, without the shared "
        f"Vega bundle (`assets/vega.js`, {bundle / 1e6:.2f} MB, loaded by every page); *page total* is "
        "the HTML plus all its chunk files and images, everything the page can ever load. "
        f"Shared assets: {folder_bytes(site / 'assets') / 1e6:.2f} MB. Charts and pages stage of that "
        f"build: {seconds(ctx.page_stage_s)}. The first sentence's page also carries the "
        "intervention figures (scaling grid on sentence 0, mean grid over sentences 0-2, so "
        "its data includes the longest sentence's grids).",
        "",
    )
    if ctx.page_build_error:
        section.add(
            f"**With default settings this site does not build**: `{ctx.page_build_error}`. "
            f"The pages below come from a rebuild with `map_tokens = {max(lengths)}`, which keeps "
            "the attention maps of every sentence.",
            "",
        )
    rows = [_page_row(n, ctx.pages[n]) for n in lengths]
    header = (
        "Tokens",
        "Charts drawn",
        "First draw",
        "All drawn",
        "Before first draw",
        "Page total",
        "Errors",
    )
    section.table(header, rows)
    _judge_pages(ctx, section)
    return section


def _page_miss(ctx: Context) -> str:
    if ctx.page_build_error:
        return "(the site does not build with default settings; it renders with map_tokens = 512)"
    return "(charts failed)"


def _judge_pages(ctx: Context, section: Section) -> None:
    judged = not ctx.quick
    if 60 in ctx.pages:
        load = ctx.pages[60]["load"]
        section.judge(
            ratio_target(
                "60 tokens: bytes before first draw", load.start_bytes / 1e6, 1.0, "MB", judged, 3
            )
        )
        section.judge(
            ratio_target("60 tokens: every chart drawn", load.all_drawn_ms / 1000, 2.0, "s", judged)
        )
    if 512 in ctx.pages:
        load = ctx.pages[512]["load"]
        ok = load.failed_charts == 0 and load.charts > 0 and not ctx.page_build_error
        measured = f"{load.charts - load.failed_charts} of {load.charts} charts in {load.all_drawn_ms / 1000:.2f} s"
        section.judge(
            Target(
                "512 tokens: page renders",
                measured,
                "every chart draws",
                ok if judged else None,
                "" if ok else _page_miss(ctx),
            )
        )


def _ours_column(facts: dict[str, Any] | None, stage_s: float) -> list[str]:
    if facts is None:
        return ["not measured (section 6 did not measure this page)"] * len(BERTVIZ_ROWS)
    load = facts["load"]
    drawn = load.charts - load.failed_charts
    return [
        f"{seconds(stage_s)} (charts and pages stage of the section 6 site, all its pages)",
        f"{facts['path'].stat().st_size / 1e6:.3f} MB",
        f"{(load.start_bytes + load.bundle_bytes) / 1e6:.2f} MB (page + shared Vega bundle)",
        f"yes: {drawn} of {load.charts} charts drew in {load.all_drawn_ms:.0f} ms",
        f"{len(load.blocked)}",
    ]


def _bertviz_column(result: dict[str, Any], name: str, render: Any) -> list[str]:
    error = render.errors[0][:80].replace("|", "/") if render.errors else "none"
    drew = f"yes: {render.svg_elements} SVG elements" if render.rendered else "no: nothing drawn"
    return [
        seconds(result[f"{name}_s"]) + ' (`html_action="return"`)',
        f"{result[f'{name}_bytes'] / 1e6:.3f} MB",
        f"{result[f'{name}_bytes'] / 1e6:.3f} MB + require.js, jQuery and d3 from a CDN",
        f"{drew} after load + {render.seconds:.1f} s; first error: {error}",
        f"{len(render.blocked)} ({', '.join(Path(u).name for u in render.blocked) or 'none'})",
    ]


BERTVIZ_ROWS = (
    "Generation time",
    "HTML file size",
    "Bytes it needs to draw",
    "Draws offline in Chromium (file://)",
    "Network requests blocked",
)


def bertviz_section(ctx: Context, n_tokens: int) -> Section:
    """7. bertviz's head_view and model_view for the same model and sentence, beside our page."""
    from attnreport.bench_browser import chromium, foreign_render
    from attnreport.bench_inputs import text_of_tokens

    section = Section(TITLES["bertviz"])
    ours = _ours_column(ctx.pages.get(n_tokens), ctx.page_stage_s)
    if ctx.bertviz_python is None:
        section.add(
            "bertviz is not installed for this run, so only our page is shown. Install it beside "
            "the project (see Reproduce) and pass `--bertviz-python`.",
            "",
        )
        section.table(("", "attnreport page"), list(zip(BERTVIZ_ROWS, ours, strict=True)))
        return section
    out = ctx.work / "bertviz"
    out.mkdir(exist_ok=True)
    text = text_of_tokens(ctx.loaded().loaded.tokenizer, n_tokens)
    run = run_worker("bertviz", {"text": text, "out_dir": str(out)}, python=ctx.bertviz_python)
    with chromium() as browser:
        renders = {
            v: foreign_render(browser, Path(run.result[f"{v}_path"]), 1.0 if ctx.quick else 3.0)
            for v in ("head_view", "model_view")
        }
    columns = [_bertviz_column(run.result, v, renders[v]) for v in renders]
    section.add(
        f"The same default model and the same {n_tokens}-token sentence as our page in section 6: "
        "bertviz's `head_view` and `model_view` (attentions from the model's own pass with "
        "`output_attentions=True`), their HTML saved as returned and opened in the same offline "
        "Chromium as our pages (every non-`file://` request aborted), then given a few seconds to draw (3 s; quick mode 1 s).",
        "",
    )
    rows = [(label, ours[i], columns[0][i], columns[1][i]) for i, label in enumerate(BERTVIZ_ROWS)]
    section.table(("", "attnreport page", "bertviz head_view", "bertviz model_view"), rows)
    return section
