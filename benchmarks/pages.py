"""Sections 6 and 7 of BENCHMARKS.md: our pages in Chromium, and bertviz beside them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks.report import Section, Target, ratio_target, seconds
from benchmarks.sections import TITLES, Context
from benchmarks.workers import run_worker


def sentence_page(site: Path, index: int) -> Path:
    """The page of sentence ``index`` in a built site (``sNNN-slug.html``)."""
    return next(site.glob(f"s{index:03d}-*.html"))


def _page_site(ctx: Context, lengths: tuple[int, ...]) -> tuple[Path, dict[str, Any]]:
    """A ``--no-images`` site whose sentence i has lengths[i] tokens (quick: the example site)."""
    if ctx.quick:
        return ctx.sites["example"], {"stages": ctx.warm_stages}
    from benchmarks.inputs import text_of_tokens

    tokenizer = ctx.loaded().loaded.tokenizer
    file = ctx.work / "page-sentences.txt"
    file.write_text("".join(text_of_tokens(tokenizer, n) + "\n" for n in lengths), encoding="utf-8")
    out = ctx.work / "site-pages"
    overrides = {"out": str(out), "sentences": str(file), "images": False, "model": ctx.model}
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
        f"{load.text_painted_ms:.0f} ms",
        f"{load.first_draw_ms:.0f} ms",
        f"{load.all_drawn_ms:.0f} ms",
        f"{load.start_bytes / 1e6:.3f} MB ({', '.join(load.start_files)})",
        f"{facts['total'] / 1e6:.2f} MB",
        len(load.errors),
    )


def pages_section(ctx: Context, lengths: tuple[int, ...]) -> Section:
    """6. Bytes before first draw, bytes per page and time until every chart drew."""
    from benchmarks.browser import chromium, folder_bytes, median_load, page_bytes

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
        f"{ctx.repeats} loads by all-drawn time). Times are from navigation start: *text painted* "
        "is Chromium's first contentful paint (the article's text, before any chart); *first "
        "draw* and *all drawn* are when the chart runtime set `data-rendered` on the first and "
        "on every `.ar-chart` (the charts' work interleaves, so they finish together). "
        "*Before first draw* is the "
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
        "Text painted",
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
    """Issue 11's page targets on every measured page (the shortest sentence's page also
    carries the intervention grids, whose inputs include the longest sentence)."""
    judged = not ctx.quick
    for tokens in sorted(ctx.pages):
        load = ctx.pages[tokens]["load"]
        name = f"{tokens} tokens" + (" (intervention page)" if tokens == min(ctx.pages) else "")
        start_mb = load.start_bytes / 1e6
        section.judge(
            ratio_target(f"{name}: bytes before first draw", start_mb, 1.0, "MB", judged, 3)
        )
        drawn_s = load.all_drawn_ms / 1000
        section.judge(ratio_target(f"{name}: every chart drawn", drawn_s, 2.0, "s", judged))
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


def bertviz_python(ctx: Context) -> tuple[str | None, str]:
    """``--bertviz-python`` when given, else the peers venv's; or None and why not."""
    if ctx.bertviz_python is not None:
        return ctx.bertviz_python, ""
    env = ctx.peers()
    if "bertviz" in env.missing:
        return None, env.missing["bertviz"]
    return env.python, ""


BERTVIZ_ROWS = (
    "Generation time",
    "HTML file size",
    "Bytes it needs to draw",
    "Draws offline in Chromium (file://)",
    "Network requests blocked",
)


def bertviz_section(ctx: Context, n_tokens: int) -> Section:
    """7. bertviz's head_view and model_view for the same model and sentence, beside our page."""
    from benchmarks.browser import chromium, foreign_render
    from benchmarks.inputs import text_of_tokens
    from benchmarks.peers import model_dir

    section = Section(TITLES["bertviz"])
    ours = _ours_column(ctx.pages.get(n_tokens), ctx.page_stage_s)
    python, why = bertviz_python(ctx)
    if python is None:
        section.add(
            f"bertviz did not run, so only our page is shown: {why}. The bench installs it "
            "into its peers venv (section 9); `--bertviz-python` names another Python with it.",
            "",
        )
        section.table(("", "attnreport page"), list(zip(BERTVIZ_ROWS, ours, strict=True)))
        return section
    out = ctx.work / "bertviz"
    out.mkdir(exist_ok=True)
    text = text_of_tokens(ctx.loaded().loaded.tokenizer, n_tokens)
    args = {"text": text, "out_dir": str(out), "model_dir": model_dir(ctx.model)}
    run = run_worker("bertviz", args, python=python)
    with chromium() as browser:
        renders = {
            v: foreign_render(browser, Path(run.result[f"{v}_path"]), 1.0 if ctx.quick else 3.0)
            for v in ("head_view", "model_view")
        }
    columns = [_bertviz_column(run.result, v, renders[v]) for v in renders]
    section.add(
        f"The same model ({ctx.model_words()}) and the same {n_tokens}-token sentence as our page in section 6: "
        "bertviz's `head_view` and `model_view` (attentions from the model's own pass with "
        "`output_attentions=True`), their HTML saved as returned and opened in the same offline "
        "Chromium as our pages (every non-`file://` request aborted), then given a few seconds to draw (3 s; quick mode 1 s).",
        "",
    )
    rows = [(label, ours[i], columns[0][i], columns[1][i]) for i, label in enumerate(BERTVIZ_ROWS)]
    section.table(("", "attnreport page", "bertviz head_view", "bertviz model_view"), rows)
    return section
