"""Which charts of a sentence page take the drawing time (a diagnosis beside section 6).

``python -m benchmarks.chart_times SITE [--pages 0,1,2] [--repeats 5] [--isolated]``
opens the sentence pages of a built site (``attnreport build --no-images``) from
``file://`` in headless Chromium, like section 6, and prints per page the median
all-drawn time, the CPU time of the renderer's main thread (``/proc``: less sensitive to
a busy machine than wall time) and each chart's renderer and draw time. The runtime
starts every chart at once and their work interleaves, so in a full page every chart
finishes at about the same moment; ``--isolated`` also loads the page once per chart with
every other chart removed before the runtime starts (and once with none, the page's own
cost), which shows what each chart costs.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
from pathlib import Path
from typing import Any

from benchmarks.browser import chromium, offline_page

TICK = os.sysconf("SC_CLK_TCK")
NONE = "__none__"  # isolate no chart: the page, the bundle and the runtime alone
WATCH = """
(() => {
  const marks = {per: {}, all: null, renderer: {}};
  window.__arCharts = marks;
  const only = ONLY;
  if (only) document.addEventListener('DOMContentLoaded', () => {
    document.querySelectorAll('.ar-chart').forEach(el => {
      if (el.getAttribute('data-key') !== only) el.remove();
    });
  });
  new MutationObserver(() => {
    const charts = [...document.querySelectorAll('.ar-chart')];
    for (const el of charts.filter(el => el.hasAttribute('data-rendered'))) {
      const key = el.getAttribute('data-key');
      if (!(key in marks.per)) {
        marks.per[key] = performance.now();
        marks.renderer[key] = el.querySelector('canvas') ? 'canvas' : 'svg';
      }
    }
    if (charts.length && charts.every(el => el.hasAttribute('data-rendered')) && marks.all === null)
      marks.all = performance.now();
  }).observe(document, {subtree: true, attributes: true, attributeFilter: ['data-rendered']});
})();
"""


def renderer_main_cpu_s() -> float:
    """CPU seconds so far of the main thread of every Chromium renderer process."""
    total = 0.0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if b"--type=renderer" not in Path(f"/proc/{pid}/cmdline").read_bytes():
                continue
            fields = Path(f"/proc/{pid}/task/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / TICK
    return total


def load(browser: Any, path: Path, only: str | None = None) -> dict[str, Any]:
    """One fresh load: per-chart draw times, all-drawn time and main-thread CPU (ms)."""
    with offline_page(browser, WATCH.replace("ONLY", json.dumps(only))) as (page, log):
        cpu = renderer_main_cpu_s()
        page.goto(path.as_uri(), wait_until="load", timeout=120_000)
        if only == NONE:
            page.wait_for_timeout(300)
        else:
            page.wait_for_function("window.__arCharts.all !== null", timeout=120_000, polling=50)
        marks = page.evaluate("window.__arCharts")
        marks["cpu"] = (renderer_main_cpu_s() - cpu) * 1000
        marks["errors"] = log.errors
    return marks


def median(loads: list[dict[str, Any]], name: str, key: str | None = None) -> float:
    """Median of ``m[name]`` (or ``m[name][key]``) over the loads."""
    return statistics.median(m[name] if key is None else m[name][key] for m in loads)


def report_page(browser: Any, path: Path, repeats: int, isolated: bool) -> None:
    loads = [load(browser, path) for _ in range(repeats)]
    print(
        f"{path.name}: all drawn {median(loads, 'all'):.0f} ms, main thread CPU "
        f"{median(loads, 'cpu'):.0f} ms, errors {sum(len(m['errors']) for m in loads)}, "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    if isolated:
        alone = [load(browser, path, NONE) for _ in range(repeats)]
        print(f"  no chart: main thread CPU {median(alone, 'cpu'):.0f} ms")
    for key, renderer in loads[0]["renderer"].items():
        line = f"  {key:26s} {renderer:6s} drawn at {median(loads, 'per', key):6.0f} ms"
        if isolated:
            alone = [load(browser, path, key) for _ in range(repeats)]
            line += (
                f"; alone {median(alone, 'per', key):6.0f} ms, main thread CPU "
                f"{median(alone, 'cpu'):6.0f} ms"
            )
        print(line)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("site", type=Path)
    parser.add_argument("--pages", default="0,1,2", help="sentence indices")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--isolated", action="store_true", help="also each chart alone")
    args = parser.parse_args(argv)
    with chromium() as browser:
        for index in (int(i) for i in args.pages.split(",")):
            page = next(args.site.glob(f"s{index:03d}-*.html"))
            report_page(browser, page, args.repeats, args.isolated)


if __name__ == "__main__":
    main()
