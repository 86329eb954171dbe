"""Sections 1-5 of BENCHMARKS.md and the ``Context`` all sections share (6 and 7 are in
``benchmarks.pages``, 9 and 10 in ``benchmarks.peers``); ``benchmarks.run`` runs them.

Every section takes the shared ``Context`` and returns a ``benchmarks.report.Section``
with its tables and the targets it judged (judged only outside quick mode).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from attnreport.config import Settings
from attnreport.session import Session, open_session
from benchmarks.measure import capture_timings, grid_timings, intervention_layer
from benchmarks.report import Section, mib, ratio_target, seconds
from benchmarks.workers import WorkerRun, run_worker

REPO = Path(__file__).resolve().parent.parent
EXAMPLE_CONFIG = REPO / "attnreport.toml"
TITLES = {
    "capture": "1. Capture, decomposition and focus statistics vs the model's own pass",
    "interventions": "2. Interventions",
    "load": "3. Model load",
    "build": "4. Example report build",
    "rebuild": "4b. Rebuilds: analyze, build and render",
    "watch": "4c. serve --watch: from a save to the screen",
    "scaling": "5. Sequence-length scaling",
    "pages": "6. Page weight and render time",
    "bertviz": "7. bertviz beside our page",
    "weight": "8. Site weight against the budgets",
    "peers": "9. Beside the peers: plain pass, eager attentions, TransformerLens, bertviz",
    "extra passes": "10. The passes a study makes besides each sentence's own",
}


@dataclass
class Context:
    """What the sections share: options, a scratch folder, the loaded model, built sites."""

    quick: bool
    repeats: int
    work: Path
    sentences_file: Path | None  # None: the built-in sentence set
    bertviz_python: str | None  # None: bertviz from the peers venv, where it installs
    peers_venv: Path | None = None  # None: benchmarks.peers.PEERS_VENV
    log: Callable[[str], None] = field(default=lambda _message: None)
    model: str = "default"  # the model measured (attnreport's --model)
    peers_env: Any = None  # benchmarks.peers.PeersEnv, once sections 7 or 9 made or found it
    session: Session | None = None
    pages: dict[int, dict[str, Any]] = field(default_factory=dict)  # tokens -> page facts
    sites: dict[str, Path] = field(default_factory=dict)  # name -> built site folder
    warm_stages: dict[str, float] = field(default_factory=dict)  # section 4, warm build
    warm_build_s: float = 0.0  # section 4's warm build, from process start to exit
    page_stage_s: float = 0.0  # charts and pages stage of the section 6 site
    page_build_error: str = ""  # why the section 6 site failed with default settings

    def peers(self) -> Any:
        """The throwaway venv of TransformerLens and bertviz (``benchmarks.peers``), made
        once per run when missing (not in quick mode); its ``PeersEnv``."""
        from benchmarks.peers import PEERS_VENV, ensure_peers_env

        if self.peers_env is None:
            venv = self.peers_venv or PEERS_VENV
            self.peers_env = ensure_peers_env(venv, install=not self.quick, log=self.log)
        return self.peers_env

    def model_words(self) -> str:
        """The model measured, as the bench's prose names it."""
        return "the default model" if self.model == "default" else f"the model `{self.model}`"

    def loaded(self) -> Session:
        """The model measured with the bench's sentences, loaded once in this process."""
        if self.session is None:
            file = str(self.sentences_file) if self.sentences_file else None
            self.session = open_session(self.model, file)
        return self.session


def build_cache(ctx: Context) -> Path:
    """Section 4's cache folder (``ATTNREPORT_CACHE`` of its builds), for the sections after
    it. Quick mode builds on this machine's model cache instead, so the folder is made
    here with its ``models`` linked to that cache: a later section then loads the default
    model from the cache, and does not dequantise the GGUF again (about 40 s)."""
    from attnreport.usercache import cache_dir

    cache = ctx.work / "cache-build"
    if not (cache / "models").exists():
        cache.mkdir(parents=True, exist_ok=True)
        (cache / "models").symlink_to((cache_dir() / "models").resolve(), target_is_directory=True)
    return cache


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
    grids = grid_timings(session, settings, layer, ctx.repeats, warm_up=not ctx.quick)
    n_layers = len(session.specs)
    section.add(
        f"At layer {layer} of {n_layers} (the strongest pooled first-token focus, as the corpus run "
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
        seconds(r["discover_s"] + r["self_check_s"]),
        seconds(r["check_cpu_s"]),
        mib(r["peak_rss_mb"]),
    )


def load_section(ctx: Context) -> Section:
    """3. Default model load: GGUF first load (fresh cache) vs cached load, from process start."""
    section = Section(TITLES["load"])
    cache = ctx.work / "cache-load"
    env = {} if ctx.quick else {"ATTNREPORT_CACHE": str(cache)}
    first = None if ctx.quick else run_worker("load", {"model": ctx.model}, env)
    cached = [run_worker("load", {"model": ctx.model}, env) for _ in range(ctx.repeats)]
    median = sorted(cached, key=lambda run: run.wall_s)[len(cached) // 2]
    section.add(
        "Each load is a new process (`python -m benchmarks.workers load`) timed by the "
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
    section.add(
        "The load-time check (discovery, then the self-check's three checks on its "
        "8-token probe: `attnreport.verification.verified_layers`) runs after the load in the same "
        'process; "In process" is up to the loaded model, "Load check" the check alone '
        '(judged against its 1 s budget on the median cached load), "Check CPU" the CPU '
        "time it used on all threads. The check's first pass is the model's first forward "
        "pass after the load, and pays its one-time warm-up.",
        "",
    )
    header = (
        "Run", "Wall from process start", "Imports", "In process", "Load check", "Check CPU",
        "Peak RSS",
    )  # fmt: skip
    section.table(header, rows)
    section.judge(
        ratio_target(
            "Cached model load, from process start", median.wall_s, 3.0, "s", not ctx.quick
        )
    )
    check = median.result["discover_s"] + median.result["self_check_s"]
    section.judge(ratio_target("Load-time self-check", check, 1.0, "s", not ctx.quick))
    return section


def _build_args(ctx: Context, out: Path) -> dict[str, Any]:
    if ctx.quick:
        overrides = {"out": str(out), "sentences": str(ctx.sentences_file), "images": False}
        return {"config": None, "overrides": {**overrides, "model": ctx.model}}
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
    ctx.warm_build_s = warm.wall_s
    what = (
        "Quick mode: two short sentences, no images, one build on the existing model cache."
        if ctx.quick
        else "The example report: `attnreport.toml` at the repository root (built-in sentences, images on)."
    )
    section.add(
        f"{what} Each build is `build_site` in a new process (`python -m benchmarks.workers build`), "
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
    runs = [run_worker("scale", {"n_tokens": n, "model": ctx.model}) for n in lengths]
    section.add(
        f"`analyze_sentence` on {ctx.model_words()} for a sentence of exactly N tokens (the bench "
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
