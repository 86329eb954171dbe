"""Image export with an empty vs a warm image cache, serial vs parallel, and build vs analyze.

Run from the repository root (the example's ``attnreport.toml``)::

    python benchmarks/image_cache.py [--config attnreport.toml] [--out report.md]

One process: the study runs once (load, capture, interventions), then the site is
assembled in memory (``assemble_site``, what ``build`` does before writing) four times:

1. without images (charts and pages only);
2. images drawn in parallel (``--workers``, default: the automatic count, which is 1
   on a busy machine), into an empty image cache;
3. the same, with that cache now warm (nothing drawn);
4. images drawn serially (``ATTNREPORT_IMAGE_WORKERS=1``) into another empty cache.

Runs 2-4 must give byte-identical sites; the script fails if they do not. The image cache
is pointed at a fresh temporary folder after the model is loaded, so the model cache is
the user's and the image cache starts empty. *analyze* is the study plus serialising its
results (``attnreport.results.dump``); *build, warm* is the study plus run 3. Neither counts
process start and imports, nor writing the folder.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from attnreport.build import study
from attnreport.charts.export import image_export
from attnreport.config import load_settings
from attnreport.results import dump
from attnreport.site.assemble import assemble_site
from attnreport.site.context import SiteOptions


def timed(fn):
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


def assemble_with(results, images: bool, cache: Path, workers: str | None):
    os.environ["ATTNREPORT_CACHE"] = str(cache)
    if workers is None:
        os.environ.pop("ATTNREPORT_IMAGE_WORKERS", None)
    else:
        os.environ["ATTNREPORT_IMAGE_WORKERS"] = workers
    return timed(lambda: assemble_site(results, SiteOptions(images=images)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="attnreport.toml")
    parser.add_argument("--out", default=None, help="also write the Markdown table here")
    parser.add_argument(
        "--workers", default=None, help="processes that draw in run 2, this one included"
    )
    args = parser.parse_args()
    settings = load_settings(args.config)
    (session, results), t_study = timed(lambda: study(settings))
    files, t_results = timed(lambda: dump(results))
    auto = image_export.worker_count(100)
    workers = int(args.workers) if args.workers else auto
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        _, t_none = assemble_with(results, False, root / "a", None)
        parallel, t_cold = assemble_with(results, True, root / "b", str(workers))
        warm, t_warm = assemble_with(results, True, root / "b", str(workers))
        image_export.shutdown_pool()
        serial, t_serial = assemble_with(results, True, root / "c", "1")
    if not parallel == warm == serial:
        raise SystemExit("the three image exports differ: not byte-identical")
    n_images = sum(name.startswith("figures/") for name in parallel)
    t_analyze = t_study + t_results
    t_build = t_study + t_warm
    rows = [
        ("study (load, capture, interventions)", t_study),
        ("results serialised (`results.dump`)", t_results),
        ("site without images", t_none),
        (
            f"site, images drawn, empty cache, {workers} drawing process(es), this one included",
            t_cold,
        ),
        ("site, images, warm cache (nothing drawn)", t_warm),
        ("site, images drawn, empty cache, serial", t_serial),
    ]
    lines = [
        f"{len(parallel)} files, {n_images} images, byte-identical in all three image runs; "
        f"os.cpu_count() = {os.cpu_count()}, automatic worker count {auto}, "
        f"load average at the end {os.getloadavg()[0]:.2f}.",
        "",
        "| Step | Seconds |",
        "| --- | --- |",
        *(f"| {name} | {seconds:.2f} |" for name, seconds in rows),
        f"| analyze (study + results) | {t_analyze:.2f} |",
        f"| build, warm image cache (study + site) | {t_build:.2f} |",
        f"| **build / analyze** | **{t_build / t_analyze:.2f}x** |",
    ]
    text = "\n".join(lines)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n", encoding="utf-8")
    del session, files


if __name__ == "__main__":
    main()
