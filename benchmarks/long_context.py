"""Time and peak RSS of the blockwise analyses at 1k-8k tokens (issue 12, long contexts).

Two measurements, each size in a fresh process so that ``ru_maxrss`` is that size's peak:

- ``synthetic``: random per-layer tensors of the default model's shape (30 layers, 9 query
  heads, 3 kv heads, head dim 64, hidden 576) through ``analyze_layer_blockwise``. With
  ``--hold`` every layer's O(n x d) tensors stay alive, as a capture that keeps all layers
  would; without it each layer is made, analysed and dropped.
- ``analyze``: the real ``attnreport analyze`` of the default model on one input of n
  tokens (every table, all 30 layers, and the interventions on that input), run under
  ``/usr/bin/time -v`` in a fresh process: wall time and peak RSS of the whole command
  (``benchmarks/long_analyze.py``).

    python benchmarks/long_context.py                      # synthetic and held, markdown
    python benchmarks/long_context.py --mode analyze --tokens 1024 2048 4096 8192

Prints one markdown table; nothing is written.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

import torch

from attnreport.analyses import merge_layers
from attnreport.analyses.blockwise import analyze_layer_blockwise
from attnreport.analyses.heads import DEFAULT_BUDGET_BYTES, LayerTensors, block_rows

LAYERS, HEADS, KV_HEADS, HEAD_DIM, HIDDEN = 30, 9, 3, 64, 576
SIZES = (1024, 2048, 4096, 8192)


def peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB


def rope(t: torch.Tensor) -> torch.Tensor:
    """Rotary embedding (base 10000, rotate-half layout) of (head, n, d)."""
    n, half = t.shape[1], t.shape[2] // 2
    inv = 10000.0 ** (-torch.arange(half, dtype=torch.float32) / half)
    angle = torch.arange(n, dtype=torch.float32)[:, None] * inv  # (n, half)
    cos, sin = torch.cos(angle), torch.sin(angle)
    a, b = t[..., :half], t[..., half:]
    return torch.cat([a * cos - b * sin, a * sin + b * cos], dim=-1)


def synthetic_layer(layer: int, n: int) -> LayerTensors:
    gen = torch.Generator().manual_seed(layer)

    def randn(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=gen)

    q_raw, k_raw = randn(HEADS, n, HEAD_DIM), randn(KV_HEADS, n, HEAD_DIM)
    return LayerTensors(
        layer=layer,
        x=randn(n, HIDDEN),
        q_raw=q_raw,
        k_raw=k_raw,
        q=rope(q_raw),
        k=rope(k_raw),
        v=randn(KV_HEADS, n, HEAD_DIM),
        q_bias=torch.zeros(HEADS, HEAD_DIM),
        k_bias=torch.zeros(KV_HEADS, HEAD_DIM),
        out_weight=randn(HEADS, HEAD_DIM, HIDDEN) * 0.05,
        out_bias=torch.zeros(HIDDEN),
        block_out=randn(n, HIDDEN),
        scaling=HEAD_DIM**-0.5,
    )


def run_synthetic(n: int, hold: bool, layers: int) -> dict:
    """Analyse ``layers`` layers (all 30 are made and kept alive first when ``hold``)."""
    held = [synthetic_layer(layer, n) for layer in range(LAYERS)] if hold else []
    start = time.perf_counter()
    tables = []
    for layer in range(layers):
        tensors = held[layer] if hold else synthetic_layer(layer, n)
        tables.append(analyze_layer_blockwise(tensors))
    merge_layers(tables)
    return {"seconds": time.perf_counter() - start, "layers": layers}


def run_one(mode: str, n: int, layers: int) -> dict:
    torch.manual_seed(0)
    before = peak_rss_bytes()
    result = run_synthetic(n, hold=mode == "held", layers=layers)
    return {**result, "rss_before": before, "peak_rss": peak_rss_bytes()}


def measure(mode: str, n: int, layers: int, threads: int) -> dict:
    """``run_one`` in a fresh interpreter, so ``ru_maxrss`` is this run's own peak."""
    command = [sys.executable, __file__, "--one", mode, str(n), str(layers), str(threads)]
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def held_bytes(n: int) -> int:
    """Bytes of one layer's O(n x d) float32 tensors: x, q_raw, q, k_raw, k, v, block_out."""
    return 4 * n * (2 * HIDDEN + 2 * HEADS * HEAD_DIM + 3 * KV_HEADS * HEAD_DIM)


def markdown(rows: list[tuple[str, int, dict]]) -> str:
    gib = 2**30
    lines = [
        "| run | tokens | layers analysed | rows per block | time (s) | s per layer "
        "| peak RSS (GiB) | RSS after imports (GiB) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for mode, n, r in rows:
        rows_per_block = block_rows(HEADS, n, DEFAULT_BUDGET_BYTES)
        lines.append(
            f"| {mode} | {n} | {r['layers']} | {rows_per_block} | {r['seconds']:.1f} | "
            f"{r['seconds'] / r['layers']:.2f} | {r['peak_rss'] / gib:.2f} | "
            f"{r['rss_before'] / gib:.2f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=("synthetic", "held", "analyze", "all"), default="all")
    parser.add_argument("--tokens", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--layers", type=int, default=LAYERS, help="layers to analyse (of 30)")
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--one", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        mode, n, layers, threads = args.one
        torch.set_num_threads(int(threads))
        print(json.dumps(run_one(mode, int(n), int(layers))))
        return
    if args.mode == "analyze":
        from benchmarks.long_analyze import main as analyze_main

        analyze_main(args.tokens)
        return
    modes = ("synthetic", "held") if args.mode == "all" else (args.mode,)
    rows = []
    for mode in modes:
        for n in args.tokens:
            rows.append((mode, n, measure(mode, n, args.layers, args.threads)))
            print(markdown(rows[-1:]).splitlines()[-1], file=sys.stderr, flush=True)
    print(markdown(rows))
    print(
        f"\nHeld O(n x d) tensors per layer at {max(args.tokens)} tokens: "
        f"{held_bytes(max(args.tokens)) / 2**20:.0f} MiB (x {LAYERS} layers); "
        f"block budget {DEFAULT_BUDGET_BYTES / 2**20:.0f} MiB, "
        f"eager n x n per layer {HEADS * max(args.tokens) ** 2 * 4 / 2**30:.2f} GiB."
    )


if __name__ == "__main__":
    main()
