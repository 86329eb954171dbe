"""One tool on one input in a fresh process: ``python -m benchmarks.peer_tasks TOOL ARGS.json``.

The peers bench (``benchmarks.peers``) starts one such process per tool and length, one
at a time, so that ``ru_maxrss`` is that tool's own peak. The module imports only the
standard library at the top: it runs under the project's Python (``plain``, ``eager``,
``attnreport``) and under the throwaway peers venv (``transformer_lens``, ``bertviz``),
where attnreport is not installed, so only the ``attnreport`` tool imports it.

Every tool gets the same token ids (the arguments' ``ids_file``) and the same weights:
the default model's GGUF as attnreport dequantises it into its cache (``model_dir``, an
ordinary ``save_pretrained`` folder), loaded with transformers. After the load, the
process caps its address space at what is free on the machine (``ARGS.free_bytes``), so
that a tool that needs more fails with an allocation error here, reported as ``oom``,
instead of pushing the machine's other work out of memory.

What is timed, per call, is CPU seconds of the whole process (``time.process_time``:
every thread) and wall seconds: one untimed warm-up call first (at most
``WARM_UP_TOKENS`` tokens; longer inputs are not worth the time twice), then ``repeats``
calls. The last line of stdout is one JSON object.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

WARM_UP_TOKENS = 256  # inputs longer than this run without the untimed warm-up call
OOM_WORDS = ("can't allocate memory", "not enough memory", "out of memory", "memoryerror")


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far, MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def proc_bytes(path: str, key: str) -> int:
    """The ``KEY:  N kB`` line of a /proc file (``/proc/meminfo``, ``/proc/self/status``)
    in bytes; 0 where the file or the key is missing (not Linux)."""
    try:
        for line in Path(path).read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def virtual_bytes() -> int:
    """This process's address space now (``VmSize``), bytes; 0 where /proc has none."""
    return proc_bytes("/proc/self/status", "VmSize")


def cap_memory(free_bytes: int) -> int:
    """Limit the address space to what it is now plus ``free_bytes`` (0: no limit)."""
    if free_bytes <= 0:
        return 0
    limit = virtual_bytes() + free_bytes
    _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    return limit


def is_oom(err: BaseException) -> bool:
    text = f"{type(err).__name__} {err}".lower()
    return isinstance(err, MemoryError) or any(word in text for word in OOM_WORDS)


def _hf_model(model_dir: str, attention: str) -> Any:
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(
        model_dir, dtype=torch.float32, attn_implementation=attention
    )
    return model.eval()


def tool_plain(args: dict[str, Any], ids: Any) -> tuple[Callable[[], Any], dict[str, Any]]:
    """The model's own pass as a user runs it: SDPA attention, no attentions returned."""
    import torch

    model = _hf_model(args["model_dir"], "sdpa")

    def call() -> None:
        with torch.no_grad():
            model(input_ids=ids, use_cache=False)

    return call, {}


def tool_plain_last(args: dict[str, Any], ids: Any) -> tuple[Callable[[], Any], dict[str, Any]]:
    """The same pass keeping only the last position's logits (``logits_to_keep=1``), as
    attnreport's own pass does: the like-for-like unit, without the LM head applied to
    every position (over half of Gemma-3's plain pass, with its 262,144-token vocabulary)."""
    import torch

    model = _hf_model(args["model_dir"], "sdpa")

    def call() -> None:
        with torch.no_grad():
            model(input_ids=ids, use_cache=False, logits_to_keep=1)

    return call, {}


def tool_eager(args: dict[str, Any], ids: Any) -> tuple[Callable[[], Any], dict[str, Any]]:
    """The model's pass with eager attention and ``output_attentions=True``."""
    import torch

    model = _hf_model(args["model_dir"], "eager")

    def call() -> None:
        with torch.no_grad():
            model(input_ids=ids, output_attentions=True, use_cache=False)

    return call, {}


def tool_attnreport(args: dict[str, Any], ids: Any) -> tuple[Callable[[], Any], dict[str, Any]]:
    """attnreport's capture and every per-sentence analysis: ``analyze_sentence`` with the
    default settings (value norms included; the study's extra passes are not)."""
    from attnreport.config import Settings
    from attnreport.session import Session, open_session
    from attnreport.study import analyze_sentence

    session = open_session(args.get("model", "default"), None)
    sentence = _sentence(session.loaded.tokenizer, ids[0].tolist())
    one = Session(session.loaded, session.specs, [sentence], session.bos)
    settings = Settings()
    return lambda: analyze_sentence(one, sentence, settings), {}


def _sentence(tokenizer: Any, ids: list[int]) -> Any:
    from attnreport.sentences import Sentence

    tokens = tuple(tokenizer.decode([i]) for i in ids)
    return Sentence(0, tokenizer.decode(ids), tuple(ids), tokens)


def tool_transformer_lens(
    args: dict[str, Any], ids: Any
) -> tuple[Callable[[], Any], dict[str, Any]]:
    """TransformerLens ``run_with_cache`` (every hook cached, as its default) through its
    ``TransformerBridge``, booted on the same transformers model (``hf_model=``)."""
    from importlib.metadata import version

    import torch
    from transformer_lens.model_bridge import TransformerBridge
    from transformers import AutoTokenizer

    model = _hf_model(args["model_dir"], "eager")
    tokenizer = AutoTokenizer.from_pretrained(args["model_dir"])
    bridge = TransformerBridge.boot_transformers(
        args["model_dir"], hf_model=model, tokenizer=tokenizer, device="cpu"
    )
    facts: dict[str, Any] = {"version": version("transformer-lens")}

    def call() -> None:
        with torch.no_grad():
            _logits, cache = bridge.run_with_cache(ids)
        facts["cached_activations"] = len(cache)

    return call, facts


def tool_bertviz(args: dict[str, Any], ids: Any) -> tuple[Callable[[], Any], dict[str, Any]]:
    """bertviz's ``head_view`` HTML: the eager pass with attentions, then the view's HTML
    (``html_action="return"``), which holds every layer's and head's weights."""
    from importlib.metadata import version

    import torch
    from bertviz import head_view
    from transformers import AutoTokenizer

    model = _hf_model(args["model_dir"], "eager")
    tokenizer = AutoTokenizer.from_pretrained(args["model_dir"])
    tokens = [tokenizer.decode([i]) for i in ids[0].tolist()]
    facts: dict[str, Any] = {"version": version("bertviz")}

    def call() -> None:
        with torch.no_grad():
            out = model(input_ids=ids, output_attentions=True, use_cache=False)
        html = head_view(out.attentions, tokens, html_action="return").data
        facts["html_mb"] = len(html.encode("utf-8")) / 1e6

    return call, facts


MAKERS = {
    "plain": tool_plain,
    "plain_last": tool_plain_last,
    "eager": tool_eager,
    "attnreport": tool_attnreport,
    "transformer_lens": tool_transformer_lens,
    "bertviz": tool_bertviz,
}


def measure(
    call: Callable[[], Any], repeats: int, warm_up: bool
) -> tuple[list[float], list[float]]:
    """CPU and wall seconds of ``repeats`` calls (after one untimed call when ``warm_up``)."""
    if warm_up:
        call()
    cpu, wall = [], []
    for _ in range(repeats):
        c, w = time.process_time(), time.perf_counter()
        call()
        cpu.append(time.process_time() - c)
        wall.append(time.perf_counter() - w)
    return cpu, wall


def run(tool: str, args: dict[str, Any]) -> dict[str, Any]:
    """Load ``tool``, cap memory, time its calls on the ids; the facts as one dict."""
    started = time.perf_counter()
    import torch

    torch.set_num_threads(int(args.get("threads", 1)))
    ids = torch.tensor([json.loads(Path(args["ids_file"]).read_text())])
    out: dict[str, Any] = {"tool": tool, "n_tokens": int(ids.shape[1])}
    try:
        call, facts = MAKERS[tool](args, ids)
        out["load_s"] = time.perf_counter() - started
        out["rss_loaded_mb"] = peak_rss_mb()
        out["memory_limit_bytes"] = cap_memory(int(args.get("free_bytes", 0)))
        warm = int(ids.shape[1]) <= WARM_UP_TOKENS
        out["cpu_s"], out["wall_s"] = measure(call, int(args.get("repeats", 1)), warm)
        out["warm_up"] = warm
        out.update(facts)
    except Exception as err:  # an allocation failure is a result here, not a crash
        if not is_oom(err):
            raise
        out["error"] = "oom"
        out["message"] = f"{type(err).__name__}: {str(err)[:200]}"
    out["peak_rss_mb"] = peak_rss_mb()
    out["torch"], out["transformers"] = torch.__version__, _transformers_version()
    return out


def _transformers_version() -> str:
    from importlib.metadata import version

    return version("transformers")


if __name__ == "__main__":
    tool, path = sys.argv[1], sys.argv[2]
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    result = run(tool, json.loads(Path(path).read_text()))
    print(json.dumps(result), flush=True)
