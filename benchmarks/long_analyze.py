"""``attnreport analyze`` on one long input of the default model: wall time and peak RSS.

For each size N a one-line sentences file of exactly N tokens (the benchmark prose,
repeated) is analysed by the real command in a fresh process, in an empty working
folder (so no ``attnreport.toml`` is read), under ``/usr/bin/time -v``:

    /usr/bin/time -v attnreport analyze --model default --sentences long.txt --out results

The table gives the tokens the results record, the wall time, the peak RSS of the
command (GNU time's "Maximum resident set size") and the 1-minute load average before
and after each run (the machine's 2 cores are shared).

    python -m benchmarks.long_context --mode analyze --tokens 1024 2048 4096 8192
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.inputs import PROSE

COMMAND = "attnreport analyze --model default --sentences long.txt --out results"


def long_text(tokenizer, n_tokens: int) -> str:
    """One line the tokenizer turns into exactly ``n_tokens`` ids (the prose, repeated)."""
    prose = " ".join([PROSE] * (n_tokens // 400 + 2))
    ids = list(tokenizer(prose).input_ids)
    for k in range(n_tokens, n_tokens - 16, -1):
        for extra in range(0, 4):
            text = tokenizer.decode(ids[: k + extra]).strip()
            count = len(tokenizer(text).input_ids)
            if count == n_tokens:
                return text
            if count > n_tokens:
                break
    raise ValueError(f"cannot make a line of exactly {n_tokens} tokens")


def run_size(text: str) -> dict:
    """Run the command on ``text`` in a fresh folder; its time, peak RSS and tokens."""
    attnreport = str(Path(sys.executable).with_name("attnreport"))
    with tempfile.TemporaryDirectory(prefix="attnreport-long-") as folder:
        Path(folder, "long.txt").write_text(text + "\n", encoding="utf-8")
        load_before = os.getloadavg()[0]
        start = time.perf_counter()
        done = subprocess.run(
            ["/usr/bin/time", "-v", attnreport, *COMMAND.split()[1:]],
            cwd=folder,
            capture_output=True,
            text=True,
        )
        seconds = time.perf_counter() - start
        if done.returncode != 0:
            raise RuntimeError(done.stderr[-2000:])
        peak = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr)[1])
        manifest = json.loads(Path(folder, "results", "manifest.json").read_text())
    return {
        "tokens": manifest["sentences"][0]["n_tokens"],  # the manifest: plain JSON in any schema
        "seconds": seconds,
        "peak_gib": peak * 1024 / 2**30,
        "load": (load_before, os.getloadavg()[0]),
    }


def markdown(rows: list[dict]) -> str:
    lines = [
        "| tokens | wall time (s) | peak RSS (GiB) | load average before / after |",
        "| ---: | ---: | ---: | --- |",
    ]
    for r in rows:
        lines.append(
            f"| {r['tokens']} | {r['seconds']:.0f} | {r['peak_gib']:.2f} | "
            f"{r['load'][0]:.2f} / {r['load'][1]:.2f} |"
        )
    return "\n".join(lines)


def main(sizes: list[int]) -> None:
    from attnreport.models import load_model

    tokenizer = load_model("default").tokenizer
    texts = {n: long_text(tokenizer, n) for n in sizes}
    del tokenizer
    rows = []
    for n in sizes:
        rows.append(run_size(texts[n]))
        print(markdown(rows[-1:]).splitlines()[-1], file=sys.stderr, flush=True)
    print(f"`{COMMAND}`, one process per size\n")
    print(markdown(rows))
