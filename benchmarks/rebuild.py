"""Section 4b of BENCHMARKS.md: what a rebuild costs, measured with the CLI in one run.

Each command runs in a new process (``python -m attnreport.cli ...``) timed from process
start to exit, back to back so they see the same machine load:

- ``analyze`` and a warm ``build`` of the same study (model, image and figure caches warm),
  as ``PAIRS`` back-to-back pairs: the median of the per-pair build / analyze ratios is
  judged (<= 1.3x), since one pair on a shared machine can be off by a second either way;
- ``render`` of that build's ``results/`` with an empty cache folder (every figure built
  and every image drawn), ``COLD`` times, each with a cache of its own, the median judged;
  and again with the last of those caches (nothing changed): <= 20 s (the example compares
  two models since issue 31: two reports and the comparison index) and <= 5 s.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.report import Section, ratio_target, seconds
from benchmarks.sections import EXAMPLE_CONFIG, TITLES, Context, build_cache

PAIRS = 3  # analyze/build pairs (1 in quick mode)
COLD = 3  # renders from scratch, each with an empty cache (1 in quick mode)
RENDER_COLD_S = 20.0  # issue 31: the two-model example (two reports and the comparison)


def _timed(args: list[str], cache: Path) -> float:
    """Wall seconds of ``attnreport ARGS`` in a new process with ``ATTNREPORT_CACHE=cache``."""
    env = {**os.environ, "ATTNREPORT_CACHE": str(cache)}
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "attnreport.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cache.parent,
    )  # fmt: skip (in a folder of the bench's own: no attnreport.toml there)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"attnreport {args[0]} failed: {done.stderr.strip()[-300:]}")
    return wall


def _study_args(ctx: Context) -> list[str]:
    if ctx.quick:  # one model, its own sentences (the example's attnreport.toml has two models)
        return ["--model", ctx.model, "--sentences", str(ctx.sentences_file)]
    return ["--config", str(EXAMPLE_CONFIG)]


def rebuild_section(ctx: Context) -> Section:
    """analyze vs warm build, render from scratch and unchanged (see the module docstring)."""
    section = Section(TITLES["rebuild"])
    work, models = ctx.work / "rebuild", build_cache(ctx)  # section 4's warm cache
    shutil.rmtree(work, ignore_errors=True)
    study = _study_args(ctx)
    images = ["--no-images"] if ctx.quick else []
    pairs = []
    for _ in range(1 if ctx.quick else PAIRS):
        analyze = _timed(["analyze", *study, "--out", str(work / "results"), "--force"], models)
        build = _timed(["build", *study, *images, "--out", str(work / "site"), "--force"], models)
        pairs.append((analyze, build))
    analyze = statistics.median(a for a, _ in pairs)
    build = statistics.median(b for _, b in pairs)
    ratio = statistics.median(b / a for a, b in pairs)
    results = work / "site" / "results"
    render = ["render", str(results), *images, "--out", str(work / "rendered"), "--force"]
    colds = [_timed(render, work / f"cache-render-{i}") for i in range(1 if ctx.quick else COLD)]
    cold = statistics.median(colds)
    warm = _timed(render, work / f"cache-render-{len(colds) - 1}")
    each = ", ".join(f"{b / a:.2f}x" for a, b in pairs)
    rows = [
        ("`attnreport analyze` (warm model cache), median", seconds(analyze), ""),
        ("`attnreport build` (model, image and figure caches warm), median", seconds(build),
         f"{ratio:.2f}x analyze (median of pairs: {each})"),
        ("`attnreport render` of its results, empty cache, median", seconds(cold),
         ", ".join(seconds(c) for c in colds)),
        ("`attnreport render` again, nothing changed", seconds(warm), ""),
    ]  # fmt: skip
    section.add(
        "The same study as section 4, each command a new process timed from start to exit, "
        f"back to back: {len(pairs)} analyze/build pair(s), then `render`. `render` runs "
        f"{len(colds)} time(s) with an empty `ATTNREPORT_CACHE` of its own (every figure built, "
        "every image drawn; the median is judged), then again with the last of those caches.",
        "",
    )
    section.table(("Command", "Wall", "Ratio, runs"), rows)
    judged = not ctx.quick
    section.judge(ratio_target("Warm build / analyze", ratio, 1.3, "x", judged))
    section.judge(
        ratio_target("Render from scratch, images included", cold, RENDER_COLD_S, "s", judged, 1)
    )
    section.judge(ratio_target("Render, nothing changed", warm, 5.0, "s", judged, 1))
    return section
