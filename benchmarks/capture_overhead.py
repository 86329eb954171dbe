"""Capture + score decomposition vs the model's own eager pass with ``output_attentions``.

Run: ``python benchmarks/capture_overhead.py [--repeats 7] [--model default]``

For each sentence of the built-in set, after one warm-up of each, ``repeats`` pairs run
back to back (so each pair sees the same machine load): (a) the model's own forward
pass with eager attention and ``output_attentions=True``, and (b) ``capture_attention``
plus every layer's ``LayerRecord`` with its score terms and per-head updates (what
attnreport computes per sentence before the analyses). The ratio of a sentence is the
median of its per-pair ratios b / a; printed per sentence, with the median and the
worst over sentences. The target is <= 1.3x.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import torch

from attnreport.capture import capture_attention
from attnreport.session import open_session


def timed(fn, ids: torch.Tensor) -> float:
    start = time.perf_counter()
    fn(ids)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="default")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    session = open_session(args.model, None)
    model = session.model

    def eager(ids):
        with torch.no_grad():
            model(input_ids=ids[None], output_attentions=True, use_cache=False)

    def ours(ids):
        capture = capture_attention(model, session.specs, ids)
        for record in capture.records():
            del record

    ratios = []
    print("| Sentence | Tokens | Model pass (median) | Capture + decomposition (median) | Ratio |")
    print("| --- | --- | --- | --- | --- |")
    for index, ids in enumerate(session.token_tensors()):
        eager(ids), ours(ids)  # warm up
        pairs = [(timed(eager, ids), timed(ours, ids)) for _ in range(args.repeats)]
        ratio = statistics.median(b / a for a, b in pairs)
        ratios.append(ratio)
        plain = statistics.median(a for a, _ in pairs) * 1e3
        captured = statistics.median(b for _, b in pairs) * 1e3
        print(f"| {index} | {len(ids)} | {plain:.1f} ms | {captured:.1f} ms | {ratio:.2f}x |")
    print(f"\nLoad average at the end: {os.getloadavg()[0]:.1f}")
    print(
        f"Median ratio {statistics.median(ratios):.2f}x, worst {max(ratios):.2f}x (target <= 1.3x)."
    )


if __name__ == "__main__":
    main()
