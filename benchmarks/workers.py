"""Benchmark work that must run in a fresh process: ``python -m benchmarks.workers TASK ARGS``.

Each task takes one JSON object of arguments and prints one JSON object (its
measurements) as the last line of stdout; ``run_worker`` starts the process, times it
from start to exit (interpreter start and imports included) and parses that line.
Peak memory is ``resource.getrusage(RUSAGE_SELF).ru_maxrss`` read at the end.

Tasks: ``load`` (load the default model), ``build`` (``build_site`` on a config),
``scale`` (``analyze_sentence`` on N tokens), ``bertviz`` (bertviz's HTML for one
sentence; run with a Python that has bertviz) and ``extra_passes`` (the passes a study
makes besides the sentence's own, against the plain pass).
"""

from __future__ import annotations

import time

STARTED = time.perf_counter()  # before any heavy import of this process

import json  # noqa: E402
import os  # noqa: E402
import resource  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402


@dataclass(frozen=True)
class WorkerRun:
    """A finished worker: wall seconds from start to exit and what it reported."""

    wall_s: float
    result: dict[str, Any]


def run_worker(
    task: str,
    args: dict[str, Any],
    env: dict[str, str] | None = None,
    python: str | None = None,
    timeout: float = 1800,
) -> WorkerRun:
    """Run ``task`` in a new process; RuntimeError with the stderr tail when it fails."""
    command = [python or sys.executable, "-m", "benchmarks.workers", task, json.dumps(args)]
    start = time.perf_counter()
    done = subprocess.run(
        command,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=timeout,
        cwd=Path(__file__).resolve().parent.parent,
    )
    wall = time.perf_counter() - start
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        tail = done.stderr.strip().splitlines()[-5:]
        raise RuntimeError(f"bench worker '{task}' failed ({done.returncode}): {' | '.join(tail)}")
    return WorkerRun(wall, json.loads(lines[-1]))


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far, in MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def since_start() -> float:
    return time.perf_counter() - STARTED


def task_load(args: dict[str, Any]) -> dict[str, Any]:
    """Import the loader and load the default model (cold or cached, per ATTNREPORT_CACHE),
    then time the load-time check every load runs (``verified_layers``): discovery, and
    the self-check on its probe, apart."""
    from attnreport.models.layout import discover
    from attnreport.models.loading import load_model
    from attnreport.verification import self_check

    imported = since_start()
    loaded = load_model(args.get("model", "default"))
    loaded_s, loaded_cpu = since_start(), time.process_time()
    specs = discover(loaded.family, loaded.model)
    discovered_s = since_start()
    self_check(loaded.model, specs)
    return {
        "import_s": imported,
        "in_process_s": loaded_s,
        "discover_s": discovered_s - loaded_s,
        "self_check_s": since_start() - discovered_s,
        "check_cpu_s": time.process_time() - loaded_cpu,  # all threads: CPU the check used
        "peak_rss_mb": peak_rss_mb(),
    }


def task_build(args: dict[str, Any]) -> dict[str, Any]:
    """``build_site`` on a settings file with overrides; stage seconds and site size."""
    from attnreport.build import build_site
    from attnreport.config import load_settings

    settings = load_settings(args.get("config"), args.get("overrides", {}))
    summary = build_site(settings, force=True)
    return {
        "stages": summary.timings.seconds,
        "pages": summary.pages,
        "figures": summary.figures,
        "files": summary.files,
        "bytes": summary.bytes,
        "in_process_s": since_start(),
        "peak_rss_mb": peak_rss_mb(),
    }


def task_scale(args: dict[str, Any]) -> dict[str, Any]:
    """``analyze_sentence`` on exactly ``n_tokens`` tokens of the default model."""
    from attnreport.config import Settings
    from attnreport.session import Session, open_session
    from attnreport.study import analyze_sentence
    from benchmarks.inputs import exact_sentence

    session = open_session(args.get("model", "default"), None)
    loaded_rss = peak_rss_mb()
    sentence = exact_sentence(session.loaded.tokenizer, int(args["n_tokens"]), repeat=True)
    one = Session(session.loaded, session.specs, [sentence], session.bos)
    start = time.perf_counter()
    analysis = analyze_sentence(one, sentence, Settings())
    seconds = time.perf_counter() - start
    return {
        "n_tokens": len(sentence.token_ids),
        "analyze_s": seconds,
        "maps_kept": analysis.result.attention is not None,
        "rss_after_load_mb": loaded_rss,
        "peak_rss_mb": peak_rss_mb(),
    }


def task_bertviz(args: dict[str, Any]) -> dict[str, Any]:
    """bertviz ``head_view`` and ``model_view`` HTML for one sentence of the default model,
    loaded by transformers from ``model_dir`` (attnreport's dequantised GGUF): it runs under
    the peers venv, where attnreport is not installed."""
    import torch
    from bertviz import head_view, model_view
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(args["model_dir"])
    model = AutoModelForCausalLM.from_pretrained(
        args["model_dir"], dtype=torch.float32, attn_implementation="eager"
    ).eval()
    ids = tokenizer(args["text"]).input_ids
    tokens = [tokenizer.decode([i]) for i in ids]
    with torch.no_grad():
        out = model(input_ids=torch.tensor([ids]), output_attentions=True, use_cache=False)
    result: dict[str, Any] = {"n_tokens": len(ids)}
    for name, view in (("head_view", head_view), ("model_view", model_view)):
        start = time.perf_counter()
        html = view(out.attentions, tokens, html_action="return").data
        result[f"{name}_s"] = time.perf_counter() - start
        path = Path(args["out_dir"]) / f"{name}.html"
        path.write_text(html, encoding="utf-8")
        result[f"{name}_path"] = str(path)
        result[f"{name}_bytes"] = path.stat().st_size
    return result


def task_extra_passes(args: dict[str, Any]) -> dict[str, Any]:
    """The passes a study makes besides the sentence's own, on ``ids_file``'s input, each
    timed in CPU seconds against the plain SDPA pass on the same input (back to back,
    ``repeats`` pairs after one untimed call that also counts its model calls and the
    attention layers run): the capture and analyses, the role probes, the BOS contrast,
    and the interventions' grids at the layer the study picks."""
    import torch

    torch.set_num_threads(int(args.get("threads", 1)))
    from attnreport.bos_contrast import contrast_ids, contrast_rows
    from attnreport.config import Settings
    from attnreport.interventions import input_grids
    from attnreport.pass_count import intervention_pass_plan
    from attnreport.probe_pass import probe_scores, session_probes
    from attnreport.session import Session, context_length, open_session
    from attnreport.study import analyze_sentence, intervention_results
    from benchmarks.measure import intervention_layer
    from benchmarks.peer_tasks import _hf_model, _sentence

    session = open_session(args.get("model", "default"), None)
    ids = json.loads(Path(args["ids_file"]).read_text())
    sentence = _sentence(session.loaded.tokenizer, ids)
    one = Session(session.loaded, session.specs, [sentence], session.bos)
    settings, model, specs = Settings(), session.model, session.specs
    x = torch.tensor(ids)
    plain_model = _hf_model(args["model_dir"], "sdpa")

    def plain() -> None:
        with torch.no_grad():
            plain_model(input_ids=x[None], use_cache=False)

    layer = intervention_layer(one, settings)
    probes = session_probes(one)
    layers = [s.layer for s in specs]
    bos = getattr(session.loaded.tokenizer, "bos_token_id", None)
    other = None if bos is None else contrast_ids(one, tuple(ids), int(bos))
    longest = min(settings.map_tokens, context_length(session.loaded))
    eps, leading = settings.epsilons, settings.map_tokens
    items: dict[str, Any] = {
        "capture + analyses": lambda: analyze_sentence(one, sentence, settings),
        "role probes": lambda: probe_scores(model, probes, layers, session.loaded.family),
        "BOS contrast": None
        if other is None or not 2 <= len(other) <= longest
        else lambda: contrast_rows(one, torch.tensor(other)),
        "scaling grid": lambda: input_grids(model, specs, 0, x, layer, eps, False, leading),
        "mean grids": lambda: input_grids(model, specs, 0, x, layer, None, True, leading),
        "both grids": lambda: intervention_results(one, settings, layer),
    }
    out: dict[str, Any] = {
        "n_tokens": len(ids),
        "layer": layer,
        "n_layers": len(specs),
        "plan": intervention_pass_plan(one, settings, layer),
        "probes": [len(probes), len(probes[0])],
        "map_tokens": settings.map_tokens,
        "bos_tokens": None if other is None else len(other),
        "items": {},
    }
    repeats = int(args.get("repeats", 1))
    for name, call in items.items():
        if call is None:
            out["items"][name] = None
            continue
        calls, attention = _counted(model, specs, call)
        pairs = [(_cpu(plain), _cpu(call)) for _ in range(repeats)]
        out["items"][name] = {
            "model_calls": calls,
            "attention_calls": attention,
            "plain_cpu_s": [p for p, _ in pairs],
            "cpu_s": [c for _, c in pairs],
        }
    out["peak_rss_mb"] = peak_rss_mb()
    return out


def _cpu(call: Any) -> float:
    start = time.process_time()
    call()
    return time.process_time() - start


def _counted(model: Any, specs: list[Any], call: Any) -> tuple[int, int]:
    """Run ``call`` once; how many times ``model`` ran, and its attention modules."""
    counts = [0, 0]

    def whole(*_args: Any) -> None:
        counts[0] += 1

    def attention(*_args: Any) -> None:
        counts[1] += 1

    handles = [model.register_forward_pre_hook(whole)]
    handles += [spec.attention.register_forward_pre_hook(attention) for spec in specs]
    try:
        call()
    finally:
        for handle in handles:
            handle.remove()
    return counts[0], counts[1]


TASKS = {
    "load": task_load,
    "build": task_build,
    "scale": task_scale,
    "bertviz": task_bertviz,
    "extra_passes": task_extra_passes,
}


if __name__ == "__main__":
    task, raw = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "{}"
    print(json.dumps(TASKS[task](json.loads(raw))))
