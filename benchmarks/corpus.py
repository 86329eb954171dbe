"""Corpus runs: sentences/s of the local and Ray engines, peak RSS against corpus size, and
the cost of writing and merging each sentence's results.

    PYTHONPATH=. python benchmarks/corpus.py --sentences 48 --rss 12,24,48 --workers 2
    PYTHONPATH=. python benchmarks/corpus.py --render 10 --render-only   # render RSS only

Throughput runs ``run_corpus`` in this process with torch on one thread, so the local
engine and each Ray worker use one core: the fair comparison on a machine with as many
cores as workers. The RSS runs are real ``attnreport analyze`` processes. Peak RSS is the driver process's (``wait4``), for the corpus
engine (the one pipeline: ``attnreport.build.study`` runs it too). ``--render N``: peak RSS of ``attnreport render
--pages 10`` over a corpus of N sentences and over one of 4N (the same ten pages drawn;
flat means render does not hold every sentence). Prints a Markdown table for BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SUBJECTS = ["The old sailor", "A small child", "My neighbour", "The tired doctor", "Our teacher"]
VERBS = ["painted", "carried", "forgot", "described", "repaired", "sold", "found"]
OBJECTS = ["a wooden boat", "the broken clock", "three red apples", "an old letter", "the map"]
ENDINGS = ["before dawn", "in the rain", "after the long meeting", "near the harbour", "again"]


def write_corpus(path: Path, count: int, seed: int = 0) -> Path:
    """``count`` different English sentences of 8-20 tokens."""
    rng, seen = random.Random(seed), set()
    while len(seen) < count:
        parts = [rng.choice(p) for p in (SUBJECTS, VERBS, OBJECTS, ENDINGS)]
        seen.add(" ".join(parts) + rng.choice([".", "!", " and then left."]))
    path.write_text("\n".join(sorted(seen)) + "\n")
    return path


def run(command: list[str]) -> tuple[float, int]:
    """Wall seconds and peak RSS (bytes) of ``command`` in a fresh process."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    start = time.perf_counter()
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - start
    err = process.stderr.read().decode() if process.stderr else ""
    if status != 0:
        raise SystemExit(f"failed: {' '.join(command)}\n{err[-2000:]}")
    return seconds, usage.ru_maxrss * 1024


def analyze(model: str, corpus: Path, out: Path, *extra: str) -> tuple[float, int]:
    command = [sys.executable, "-m", "attnreport.cli", "analyze", "--model", model]
    return run(command + ["--sentences", str(corpus), "--out", str(out), *extra])


def throughput(model: str, corpus: Path, out: Path, engine: str, workers: int) -> dict[str, float]:
    """Wall seconds of a whole run in this process, and sentences/s between the first and
    the last finished sentence (the steady rate, without model loads and Ray start-up)."""
    import torch

    from attnreport.config import load_settings
    from attnreport.corpus import CorpusOptions, run_corpus

    torch.set_num_threads(1)
    stamps: list[float] = []

    def progress(stage: str, done: int, _total: int) -> None:
        if stage == "capture" and done:
            stamps.append(time.perf_counter())

    start = time.perf_counter()
    options = CorpusOptions(engine=engine, workers=workers if engine == "ray" else None)
    settings = load_settings(None, {"model": model, "sentences": str(corpus), "out": str(out)})
    run_corpus(settings, options, progress=progress)
    wall = time.perf_counter() - start
    return {"wall": wall, "rate": (len(stamps) - 1) / (stamps[-1] - stamps[0])}


def merge_cost(results: Path) -> dict[str, float]:
    """Milliseconds per sentence to write its two files and add its partial, from a finished run."""
    from attnreport.corpus.partial import SentencePartial, SetPartial
    from attnreport.corpus.store import RunStore

    parts = sorted((results / "partials").glob("*.json"))
    loaded = [SentencePartial.from_json(json.loads(p.read_text())) for p in parts]
    sentences = [(results / "sentences" / p.name).read_bytes() for p in parts]
    with tempfile.TemporaryDirectory() as tmp:
        store = RunStore(Path(tmp))
        start = time.perf_counter()
        for part, data in zip(loaded, sentences, strict=True):
            store.write_sentence(part.index, data, part)
        write = time.perf_counter() - start
    totals = SetPartial()
    start = time.perf_counter()
    for part in loaded:
        totals.add(part)
    add = time.perf_counter() - start
    start = time.perf_counter()
    totals.tables()
    tables = time.perf_counter() - start
    n = len(loaded)
    return {"write_ms": 1e3 * write / n, "add_ms": 1e3 * add / n, "tables_s": tables}


def folder_mib(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 2**20


def render_rss(model: str, folder: Path, size: int) -> list[str]:
    """Peak RSS of ``attnreport render --pages 10 --no-images`` (a fresh process) over an
    analysed corpus of ``size`` sentences and over one 4x larger: the same ten pages are
    drawn, so the difference is what reading a larger results folder costs."""
    rows = []
    for n in (size, 4 * size):
        results = folder / f"render-{n}"
        analyze(model, write_corpus(folder / f"render-{n}.txt", n, seed=n), results)
        site = folder / f"site-{n}"
        command = [sys.executable, "-m", "attnreport.cli", "render", str(results)]
        seconds, peak = run(command + ["--out", str(site), "--pages", "10", "--no-images"])
        rows.append(
            f"| peak RSS of `render --pages 10 --no-images`, {n} sentences "
            f"({folder_mib(results):.0f} MiB of results) | {peak / 2**20:.0f} MiB, {seconds:.1f} s |"
        )
    return rows


def engine_rows(args: argparse.Namespace, folder: Path) -> list[str]:
    """Throughput of both engines, the merge cost, and analyze's peak RSS per corpus size."""
    corpus = write_corpus(folder / "corpus.txt", args.sentences)
    rows = []
    for engine in ("local", "ray"):
        got = throughput(args.model, corpus, folder / engine, engine, args.workers)
        rows.append(
            f"| {engine} engine{f', {args.workers} workers' if engine == 'ray' else ''}, "
            f"{args.sentences} sentences | {got['rate']:.2f} sentences/s steady; "
            f"{got['wall']:.1f} s in all |"
        )
    cost = merge_cost(folder / "local")
    rows.append(
        f"| per sentence: write 2 files / add partial | {cost['write_ms']:.2f} ms / {cost['add_ms']:.2f} ms |"
    )
    rows.append(f"| set-wide tables from the merged totals | {cost['tables_s'] * 1e3:.1f} ms |")
    for size in (int(s) for s in args.rss.split(",")):
        small = write_corpus(folder / f"rss-{size}.txt", size, seed=size)
        _, streamed = analyze(args.model, small, folder / f"rss-{size}")
        rows.append(f"| peak RSS, {size} sentences: corpus engine | {streamed / 2**20:.0f} MiB |")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="default")
    parser.add_argument("--sentences", type=int, default=48)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rss", default="12,24,48", help="corpus sizes for the RSS curve")
    parser.add_argument(
        "--render",
        type=int,
        default=10,
        help="render RSS over this many sentences and 4x (0: skip)",
    )
    parser.add_argument(
        "--render-only", action="store_true", help="only the render RSS (skip engines and analyze)"
    )
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="attnreport-bench-corpus-"))
    rows = [] if args.render_only else engine_rows(args, folder)
    if args.render:
        rows += render_rss(args.model, folder, args.render)
    load = os.getloadavg()[0]
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"load average {load:.1f} at the end")  # fmt: skip
    print("| Measure | Value |\n| --- | --- |")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
