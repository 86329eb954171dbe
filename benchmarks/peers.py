"""Section 9 of BENCHMARKS.md: attnreport beside its peers, and the study's extra passes.

The peers (issue 43), each on the same token ids and the same weights (the default
model's GGUF as attnreport dequantises it), one tool and one length per fresh process
(``benchmarks.peer_tasks``), one process at a time:

- ``plain``: the model's own pass as a user runs it (SDPA, no attentions), the unit;
- ``plain_last``: the same pass keeping the last position's logits only, as attnreport's
  pass does (``logits_to_keep=1``): the like-for-like unit, reported beside the targets;
- ``eager``: the pass with eager attention and ``output_attentions=True``;
- ``attnreport``: ``analyze_sentence``, the capture and every per-sentence analysis;
- ``transformer_lens``: TransformerLens ``run_with_cache`` through its bridge;
- ``bertviz``: the eager pass, then bertviz's ``head_view`` HTML.

TransformerLens and bertviz run under a throwaway venv the bench makes when it is
missing (``PEERS_VENV``, outside the repository), with torch pinned by the project's
``constraints.txt``; nothing is ever installed into the project's own environment. A
tool that cannot be installed or imported is named in the tables with the reason.

Each length runs ``plain`` first and last, the others between them, so every ratio's
two sides are measured minutes apart at most; the unit is the mean of the two plain
runs. Times are CPU seconds of the whole process with torch on ``THREADS`` thread (on
a shared 2-core machine one thread keeps CPU time from counting the time OpenMP's
threads spin while another process holds a core). A tool that runs out of memory, is
killed or runs past ``TIMEOUT_S`` at one length is not run at the longer ones.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.peer_tasks import MAKERS, proc_bytes
from benchmarks.report import Section, Target, ratio_target

REPO = Path(__file__).resolve().parent.parent
CONSTRAINTS = REPO / "constraints.txt"
PEERS_VENV = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / (
    "attnreport-bench/peers-venv"
)
PEER_REQUIREMENTS = ("transformer-lens==4.3.0", "bertviz==1.4.1")
CPU_TORCH_INDEX = "https://download.pytorch.org/whl/cpu"  # as the Makefile's CPU_TORCH
STAMP = ".attnreport-peers.json"  # written by the bench into a venv it made
PEER_IMPORTS = {"transformer_lens": "transformer_lens.model_bridge", "bertviz": "bertviz"}
TOOLS = tuple(MAKERS)  # plain, plain_last, eager, attnreport, transformer_lens, bertviz
LABELS = {
    "plain": "plain pass (SDPA)",
    "plain_last": "plain pass, last position's logits",
    "eager": "eager + `output_attentions`",
    "attnreport": "attnreport capture + analyses",
    "transformer_lens": "TransformerLens `run_with_cache`",
    "bertviz": "bertviz `head_view` HTML",
}
# 8192: the default model's whole context, where issue 43 judges peak memory too (a tool
# that runs out of memory there, as eager attentions and TransformerLens's cache do, says so).
LENGTHS = (32, 64, 128, 256, 512, 1024, 2048, 8192)
QUICK_LENGTHS = (16,)
TARGET_LENGTHS = (64, 2048)  # issue 43: capture + analyses judged from 64 to 2048 tokens
RSS_TARGET_TOKENS = (2048, 8192)  # issue 43: peak RSS judged at each
THREADS = 1
TIMEOUT_S = 900
MEMORY_MARGIN = 2 * 2**30  # left free for the machine's other work
INSTALL_TIMEOUT_S = 1800


# --- the throwaway venv -------------------------------------------------------------


def venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def is_project_env(venv: Path, prefix: str | None = None) -> bool:
    """Whether ``venv`` is (or holds, or is inside) the environment running the bench."""
    here = Path(prefix or sys.prefix).resolve()
    there = venv.resolve()
    return there == here or here in there.parents or there in here.parents


def requirements_stamp(constraints: Path = CONSTRAINTS) -> dict[str, Any]:
    """What a venv made by the bench holds: the peers and the constraints' digest."""
    digest = hashlib.sha256(constraints.read_bytes()).hexdigest()[:16]
    return {"requirements": list(PEER_REQUIREMENTS), "constraints": digest}


def install_commands(
    venv: Path, gpu: bool, constraints: Path = CONSTRAINTS
) -> list[tuple[str, list[str]]]:
    """(what it installs, command): the commands that make ``venv`` and install each peer
    into it (``PEER_REQUIREMENTS``, one command each so that one failing leaves the
    other), every pip run by the venv's own interpreter. Without a GPU, torch comes
    first from PyTorch's CPU index (no retries: where that cannot be reached pip goes on
    to the other places it is told to look), as the Makefile installs the project's, so
    that no CUDA build is pulled; the constraints pin the version either way."""
    python = str(venv_python(venv))
    pip = [python, "-m", "pip", "install", "-q", "-c", str(constraints)]
    commands = [
        ("venv", [sys.executable, "-m", "venv", "--clear", str(venv)]),
        ("pip", [python, "-m", "pip", "install", "-q", "--upgrade", "pip"]),
    ]
    if not gpu:
        index = ["--index-url", CPU_TORCH_INDEX, "--retries", "0", "--timeout", "5"]
        commands.append(("torch", [*pip, "torch", *index]))
    tools = dict(zip(PEER_REQUIREMENTS, PEER_IMPORTS, strict=True))
    commands += [(tools[requirement], [*pip, requirement]) for requirement in PEER_REQUIREMENTS]
    return commands


@dataclass(frozen=True)
class PeersEnv:
    """The peers venv: its interpreter, and why each peer that cannot run there cannot."""

    python: str | None
    missing: dict[str, str] = field(default_factory=dict)  # tool -> reason
    installed_s: float = 0.0  # seconds spent making the venv in this run (0: reused)
    note: str = ""


def _stamp_of(venv: Path) -> dict[str, Any] | None:
    try:
        return json.loads((venv / STAMP).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _tail(text: str, lines: int = 3) -> str:
    kept = [line for line in text.strip().splitlines() if not line.startswith("WARNING: Location")]
    return " / ".join(kept[-lines:])[-300:]


def make_venv(venv: Path, log: Callable[[str], None]) -> dict[str, str]:
    """Make ``venv`` and install the peers; tool -> why it could not be installed (a
    failed setup step fails every tool). The stamp says "complete" only when nothing
    failed, so that the next run tries again."""
    stamp = requirements_stamp()
    venv.parent.mkdir(parents=True, exist_ok=True)
    gpu = shutil.which("nvidia-smi") is not None
    failed: dict[str, str] = {}
    for what, command in install_commands(venv, gpu):
        log(f"bench:   {' '.join(command[1:])[:150]}")
        try:
            done = subprocess.run(
                command, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S
            )
            problem = "" if done.returncode == 0 else _tail(done.stderr or done.stdout)
        except (OSError, subprocess.SubprocessError) as err:
            problem = str(err)
        if problem and what in PEER_IMPORTS:
            failed[what] = f"`pip install {command[-1]}` failed: {problem}"
        elif problem:
            return {
                tool: f"`{' '.join(command[1:4])}` ({what}) failed: {problem}"
                for tool in PEER_IMPORTS
            }
        if what == "venv":  # ours from now on, even if an install fails
            (venv / STAMP).write_text(json.dumps({**stamp, "complete": False}), encoding="utf-8")
    if not failed:
        (venv / STAMP).write_text(json.dumps({**stamp, "complete": True}), encoding="utf-8")
    return failed


def import_problem(python: str, module: str) -> str:
    """An empty string when ``python`` imports ``module``, else the error's last line."""
    try:
        done = subprocess.run(
            [python, "-c", f"import {module}"], capture_output=True, text=True, timeout=300
        )
    except (OSError, subprocess.SubprocessError) as err:
        return str(err)
    return "" if done.returncode == 0 else _tail(done.stderr, 1)


def ensure_peers_env(
    venv: Path, install: bool, log: Callable[[str], None] = lambda _m: None
) -> PeersEnv:
    """The peers venv at ``venv``: reused when the bench made it with today's
    requirements, (re)made when ``install`` and it is missing or stale, used as it is
    when someone else made it (no stamp); never the environment running the bench."""
    if is_project_env(venv):
        reason = f"{venv} is the project's own environment: the bench installs nothing there"
        return PeersEnv(None, {t: reason for t in PEER_IMPORTS})
    stamp, installed_s, note = _stamp_of(venv), 0.0, "reused"
    current = {**requirements_stamp(), "complete": True}
    exists = venv_python(venv).exists()
    if stamp is None and not exists and venv.is_dir() and any(venv.iterdir()):
        reason = f"{venv} is a folder of something else (no venv, no stamp): not touched"
        return PeersEnv(None, {t: reason for t in PEER_IMPORTS})
    failed: dict[str, str] = {}
    if stamp is not None and stamp != current or (stamp is None and not exists):
        if not install:
            reason = f"no peers venv at {venv} (quick mode installs nothing)"
            return PeersEnv(None, {t: reason for t in PEER_IMPORTS})
        log(f"bench: making the peers venv {venv} ({', '.join(PEER_REQUIREMENTS)}) ...")
        start = time.perf_counter()
        failed = make_venv(venv, log)
        installed_s = time.perf_counter() - start
        note = f"made in this run ({installed_s:.0f} s)"
    elif stamp is None:
        note = "made outside the bench, used as it is"
    python = str(venv_python(venv))
    missing = dict(failed)
    for tool, module in PEER_IMPORTS.items():
        problem = "" if tool in missing else import_problem(python, module)
        if problem:
            missing[tool] = f"cannot import {module}: {problem}"
    usable = venv_python(venv).exists() and len(missing) < len(PEER_IMPORTS)
    return PeersEnv(python if usable else None, missing, installed_s, note)


# --- running one tool ----------------------------------------------------------------


@dataclass(frozen=True)
class PeerRun:
    """One tool at one length: the worker's facts, or why there are none."""

    tool: str
    n_tokens: int
    result: dict[str, Any] | None
    failure: str = ""  # "", "oom", "killed", "timed out", "error: ...", "not installed: ..."

    @property
    def cpu_s(self) -> float | None:
        return None if self.failed else statistics.median(self.result["cpu_s"])

    @property
    def peak_mb(self) -> float | None:
        return None if self.failed else self.result["peak_rss_mb"]

    @property
    def failed(self) -> bool:
        return bool(self.failure) or self.result is None

    @property
    def stops_longer(self) -> bool:
        """Whether the longer inputs are not worth trying (out of memory or time)."""
        return self.failure in ("oom", "killed", "timed out")


def tool_pythons(env: PeersEnv) -> dict[str, str | None]:
    """The interpreter of each tool: the project's for the plain and eager passes and
    attnreport, the peers venv's for TransformerLens and bertviz."""
    ours = {tool: sys.executable for tool in TOOLS if tool not in PEER_IMPORTS}
    return ours | {tool: env.python for tool in PEER_IMPORTS}


def available_bytes() -> int:
    """``MemAvailable`` of /proc/meminfo, bytes (0 where there is none)."""
    return proc_bytes("/proc/meminfo", "MemAvailable")


def worker_command(python: str, tool: str, args_file: Path) -> list[str]:
    return [python, "-m", "benchmarks.peer_tasks", tool, str(args_file)]


def run_tool(
    python: str, tool: str, args: dict[str, Any], work: Path, timeout: float = TIMEOUT_S
) -> PeerRun:
    """``tool`` in a fresh process of ``python``, capped at what is free now less a margin."""
    n = int(args["n_tokens"])
    free = max(available_bytes() - MEMORY_MARGIN, 2**30)
    args_file = work / f"peer-{tool}-{n}.json"
    args_file.write_text(json.dumps({**args, "free_bytes": free}), encoding="utf-8")
    env = {**os.environ, "OMP_NUM_THREADS": str(args.get("threads", THREADS))}
    try:
        done = subprocess.run(
            worker_command(python, tool, args_file),
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=REPO,
            env=env,
        )
    except subprocess.TimeoutExpired:
        return PeerRun(tool, n, None, "timed out")
    lines = done.stdout.strip().splitlines()
    if done.returncode < 0:
        return PeerRun(tool, n, None, "killed")
    if done.returncode != 0 or not lines:
        return PeerRun(tool, n, None, f"error: {_tail(done.stderr, 1)}")
    result = json.loads(lines[-1])
    return PeerRun(tool, n, result, result.get("error", ""))


def repeats_at(n_tokens: int, repeats: int) -> int:
    """Timed calls per process: up to 3 to 256 tokens, 2 at 512, 1 beyond."""
    return min(repeats, 3 if n_tokens <= 256 else 2 if n_tokens <= 512 else 1)


# --- the measurements ----------------------------------------------------------------


@dataclass
class LengthRuns:
    """Every tool at one length; ``plain`` holds the runs before and after the others."""

    n_tokens: int
    plain: list[PeerRun] = field(default_factory=list)
    tools: dict[str, PeerRun] = field(default_factory=dict)

    @property
    def unit_cpu(self) -> float | None:
        """The plain pass's CPU seconds: the mean of its runs before and after the others."""
        values = [r.cpu_s for r in self.plain if r.cpu_s is not None]
        return statistics.mean(values) if values else None

    @property
    def unit_peak(self) -> float | None:
        values = [r.peak_mb for r in self.plain if r.peak_mb is not None]
        return statistics.mean(values) if values else None

    def cpu_ratio(self, tool: str) -> float | None:
        run, unit = self.tools.get(tool), self.unit_cpu
        return None if run is None or run.cpu_s is None or not unit else run.cpu_s / unit

    def rss_ratio(self, tool: str) -> float | None:
        run, unit = self.tools.get(tool), self.unit_peak
        return None if run is None or run.peak_mb is None or not unit else run.peak_mb / unit


def measure_peers(
    lengths: Sequence[int],
    pythons: dict[str, str | None],
    missing: dict[str, str],
    base_args: dict[str, Any],
    ids_of: Callable[[int], list[int]],
    work: Path,
    repeats: int,
    log: Callable[[str], None] = lambda _m: None,
    runner: Callable[..., PeerRun] = run_tool,
) -> list[LengthRuns]:
    """Every length, shortest first: plain, the other tools, plain again; a tool that ran
    out of memory or time is not run at longer lengths (named as not run)."""
    stopped: dict[str, str] = {}
    out = []
    for n in lengths:
        ids_file = work / f"peer-ids-{n}.json"
        ids_file.write_text(json.dumps(ids_of(n)), encoding="utf-8")
        args = {**base_args, "ids_file": str(ids_file), "n_tokens": n}
        args["repeats"] = repeats_at(n, repeats)
        runs = LengthRuns(n)
        for tool in ("plain", *TOOLS[1:], "plain"):
            if tool in missing:
                runs.tools[tool] = PeerRun(tool, n, None, f"not installed: {missing[tool]}")
                continue
            if tool in stopped:
                runs.tools[tool] = PeerRun(tool, n, None, f"not run: {stopped[tool]}")
                continue
            start = time.perf_counter()
            run = runner(pythons[tool], tool, args, work)
            log(
                f"bench:   {n} tokens, {tool}: {describe(run)} ({time.perf_counter() - start:.0f} s)"
            )
            if tool == "plain":
                runs.plain.append(run)
            else:
                runs.tools[tool] = run
            if run.stops_longer:
                stopped[tool] = f"{run.failure} at {n} tokens"
        out.append(runs)
    return out


def describe(run: PeerRun) -> str:
    if run.failed:
        return run.failure or "no result"
    return f"{run.cpu_s:.2f} CPU s, peak {run.peak_mb:.0f} MiB"


# --- the tables ----------------------------------------------------------------------


def _failure_cell(run: PeerRun | None) -> str:
    if run is None:
        return "-"
    if run.failure == "oom":
        limit = (run.result or {}).get("memory_limit_bytes", 0) / 2**30
        peak = (run.result or {}).get("peak_rss_mb", 0) / 1024
        return f"out of memory (peak {peak:.1f} GiB, cap {limit:.1f} GiB)"
    if run.failure == "killed":
        return "killed (the kernel's OOM killer?)"
    if run.failure == "timed out":
        return f"timed out ({TIMEOUT_S} s)"
    return run.failure.replace("|", "/")


def cpu_rows(runs: Sequence[LengthRuns]) -> list[tuple]:
    """Per length: the plain pass's CPU seconds, then each tool as a multiple of it."""
    rows = []
    for r in runs:
        unit = r.unit_cpu
        before_after = " / ".join(f"{p.cpu_s:.2f}" for p in r.plain if p.cpu_s is not None)
        first = (
            f"{unit:.2f} s ({before_after})"
            if unit
            else _failure_cell(r.plain[0] if r.plain else None)
        )
        cells = []
        for tool in TOOLS[1:]:
            ratio = r.cpu_ratio(tool)
            run = r.tools.get(tool)
            cells.append(f"{ratio:.2f}x ({run.cpu_s:.2f} s)" if ratio else _failure_cell(run))
        rows.append((r.n_tokens, first, *cells))
    return rows


def rss_rows(runs: Sequence[LengthRuns]) -> list[tuple]:
    """Per length: the plain pass's peak RSS, then each tool's peak as a multiple of it."""
    rows = []
    for r in runs:
        unit = r.unit_peak
        first = f"{unit:.0f} MiB" if unit else "-"
        cells = []
        for tool in TOOLS[1:]:
            ratio = r.rss_ratio(tool)
            run = r.tools.get(tool)
            cells.append(f"{ratio:.2f}x ({run.peak_mb:.0f} MiB)" if ratio else _failure_cell(run))
        rows.append((r.n_tokens, first, *cells))
    return rows


def like_for_like_rows(runs: Sequence[LengthRuns]) -> list[tuple]:
    """Per length: attnreport's CPU as a multiple of the plain pass (every position's
    logits, the targets' unit) and of the pass keeping the last position's logits only, as
    attnreport's own pass does (the like-for-like unit)."""
    rows = []
    for r in runs:
        ours, last = r.tools.get("attnreport"), r.tools.get("plain_last")
        plain = r.cpu_ratio("attnreport")
        alike = (
            ours.cpu_s / last.cpu_s
            if ours and last and ours.cpu_s is not None and last.cpu_s
            else None
        )
        rows.append((
            r.n_tokens,
            f"{plain:.2f}x" if plain else "-",
            f"{alike:.2f}x" if alike else "-",
        ))  # fmt: skip
    return rows


def header(first: str) -> tuple[str, ...]:
    return ("Tokens", first, *(LABELS[t] for t in TOOLS[1:]))


def peer_targets(runs: Sequence[LengthRuns], judged: bool) -> list[Target]:
    """Issue 43's targets on these runs: attnreport's CPU ratio, worst from 64 to 2048
    tokens (<= 1.5x; the goal 1.2x), and its peak RSS at 2048 and at 8192 tokens (<= 1.4x
    each; a length not run is not measured)."""
    low, high = TARGET_LENGTHS
    ranged = [r for r in runs if low <= r.n_tokens <= high]
    ratios = {r.n_tokens: r.cpu_ratio("attnreport") for r in ranged}
    measured = [v for v in ratios.values() if v is not None]
    lengths = sorted(r.n_tokens for r in runs)
    judged_all = judged and lengths and low in lengths and high in lengths
    out = []
    what = f"Capture + every analysis vs plain SDPA pass, CPU, worst of {low}-{high} tokens"
    if measured and len(measured) == len(ratios):
        worst = max(measured)
        out.append(ratio_target(what, worst, 1.5, "x", bool(judged_all)))
        out.append(ratio_target(what + " (goal)", worst, 1.2, "x", bool(judged_all)))
    else:
        out.append(Target(what, "not measured at every length", "<= 1.5 x", False if judged_all else None,
                          "(a length has no result)"))  # fmt: skip
    for n in RSS_TARGET_TOKENS:
        at = next((r for r in runs if r.n_tokens == n), None)
        what = f"Peak RSS at {n} tokens, capture + analyses vs plain pass"
        ratio = at.rss_ratio("attnreport") if at else None
        if ratio is not None:
            out.append(ratio_target(what, ratio, 1.4, "x", judged))
        else:
            out.append(Target(what, "not measured", "<= 1.4 x", None))
    return out


def peers_about(env: PeersEnv, venv: Path, repeats: int, model: str = "the default model") -> str:
    made = f"`{venv}` ({env.note})" if env.python else f"`{venv}` (not usable)"
    return (
        "Every tool on the same input (the bench prose, repeated to N tokens) and the same "
        f"weights ({model}, loaded by transformers from where attnreport loads it: a GGUF "
        "as attnreport dequantises it), one tool and length per fresh process, one at a time. At "
        f"each length the plain pass runs first and last, the {len(TOOLS) - 1} others between; the "
        "unit is the mean of the two plain runs (both shown). CPU seconds of the whole "
        f"process (every thread; torch on {THREADS} thread) for one call after the load, the "
        f"median of {repeats_at(256, repeats)} timed calls to 256 tokens, "
        f"{repeats_at(512, repeats)} at 512 and {repeats_at(1024, repeats)} beyond, after an "
        "untimed warm-up call up to 256 tokens. Peak RSS is the process's `ru_maxrss`, the "
        "loaded model and imports included. TransformerLens runs its `TransformerBridge` "
        "booted with `hf_model=` on the same transformers model and caches every hook (its "
        "default); bertviz is the eager pass with attentions and `head_view(..., "
        'html_action="return")`. Both run under the throwaway venv '
        f"{made}, never in the project's. Each process may use the memory free when it "
        "starts, less 2 GiB (an address-space cap): past that it fails as out of memory "
        "and the tool is not run at longer lengths."
    )


def peers_versions(runs: Sequence[LengthRuns]) -> str:
    """The peers' versions, and torch and transformers as each interpreter had them (the
    project's environment and the peers venv can differ: say so rather than assume)."""
    versions: dict[str, str] = {}
    stacks: dict[str, set[str]] = {"the project's environment": set(), "the peers venv": set()}
    for r in runs:
        for run in [*r.plain, *r.tools.values()]:
            if not run.result:
                continue
            if run.result.get("version"):
                versions[LABELS[run.tool].split()[0]] = run.result["version"]
            if run.result.get("transformers"):
                where = (
                    "the peers venv" if run.tool in PEER_IMPORTS else "the project's environment"
                )
                stacks[where].add(
                    f"torch {run.result['torch']}, transformers {run.result['transformers']}"
                )
    parts = [f"{name} {v}" for name, v in versions.items()]
    parts += [f"{' / '.join(sorted(s))} in {where}" for where, s in stacks.items() if s]
    return "; ".join(parts)


def peers_tables(section: Section, runs: Sequence[LengthRuns]) -> None:
    section.add(
        "CPU seconds, as multiples of the plain pass (that tool's own CPU seconds in brackets):", ""
    )
    section.table(header("Plain pass CPU s (before / after)"), cpu_rows(runs))
    section.add("Peak RSS, as multiples of the plain pass's peak (MiB in brackets):", "")
    section.table(header("Plain pass peak RSS"), rss_rows(runs))
    section.add(
        "attnreport's capture + analyses against each plain pass, CPU. Its own pass keeps "
        "only the last position's logits; the plain pass, as a user runs it, computes every "
        "position's, which costs more the larger the vocabulary. The targets are judged on "
        "the first; the second compares like with like:",
        "",
    )
    section.table(
        ("Tokens", "vs plain pass", "vs plain pass, last position's logits"),
        like_for_like_rows(runs),
    )


# --- the sections --------------------------------------------------------------------


def model_dir(name: str = "default") -> str:
    """Where transformers loads model ``name`` (attnreport's ``--model``) from: a GGUF (the
    default model's too) dequantised by attnreport into its cache (once), a model folder
    itself, or a Hub id; every tool here loads it, so all run the same weights."""
    from attnreport.models.loading import pretrained_location, resolve_source

    return pretrained_location(resolve_source(name))[0]


def bench_ids(ctx: Any, n_tokens: int) -> list[int]:
    """The bench prose, repeated to exactly ``n_tokens`` ids of the measured model's tokenizer."""
    from benchmarks.inputs import exact_sentence

    return list(exact_sentence(ctx.loaded().loaded.tokenizer, n_tokens, repeat=True).token_ids)


def peers_section(ctx: Any) -> Section:
    """9. attnreport beside the plain pass, eager attentions, TransformerLens and bertviz."""
    from benchmarks.sections import TITLES

    section = Section(TITLES["peers"])
    venv = ctx.peers_venv or PEERS_VENV
    env = ctx.peers()
    pythons = tool_pythons(env)
    lengths = QUICK_LENGTHS if ctx.quick else LENGTHS
    base = {"model_dir": model_dir(ctx.model), "model": ctx.model, "threads": THREADS}
    work = ctx.work / "peers"
    work.mkdir(exist_ok=True)
    runs = measure_peers(
        lengths, pythons, env.missing, base, lambda n: bench_ids(ctx, n), work, ctx.repeats,
        ctx.log,
    )  # fmt: skip
    section.add(peers_about(env, venv, ctx.repeats, ctx.model_words()), "")
    versions = peers_versions(runs)
    if versions:
        section.add(f"Versions: {versions}.", "")
    for tool, reason in env.missing.items():
        section.add(f"**{LABELS[tool]} did not run**: {reason}", "")
    peers_tables(section, runs)
    for target in peer_targets(runs, not ctx.quick):
        section.judge(target)
    return section


EXTRA_LENGTHS = (64, 512)
GRIDS_TARGET_TOKENS = 512
GRIDS_LIMIT = 12.0  # issue 43: both grids together, in plain-pass equivalents
EXTRA_ROWS = {  # item -> (what it is, when a study runs it)
    "capture + analyses": ("the sentence's own pass", "once per sentence"),
    "role probes": ("{probes} induction probes of {probe_tokens} tokens, one batch",
                    "once per model"),
    "BOS contrast": ("the sentence again in the other BOS condition",
                     "once per sentence of at most map_tokens ({map_tokens})"),
    "scaling grid": ("1 unmodified pass + {scaling} cells", "per scaling input (the first 8)"),
    "mean grids": ("1 unmodified pass + {mean} cells", "per mean input (the first 3)"),
    "both grids": ("one unmodified pass shared, as `intervention_results` runs them",
                   "per input in both grids"),
}  # fmt: skip


def equivalents(item: dict[str, Any]) -> float:
    """Median over pairs of the item's CPU seconds / the plain pass's just before it."""
    pairs = zip(item["cpu_s"], item["plain_cpu_s"], strict=True)
    return statistics.median(c / p for c, p in pairs)


def extra_rows(result: dict[str, Any]) -> list[tuple]:
    plan = result["plan"]
    facts = {
        "probes": result["probes"][0],
        "probe_tokens": result["probes"][1],
        "map_tokens": result["map_tokens"],
        "scaling": plan["scaling"],
        "mean": plan["mean"] + plan["mean before rotation"],
    }
    rows = []
    for name, (what, when) in EXTRA_ROWS.items():
        item = result["items"].get(name)
        label = f"{name}: {what.format(**facts)}"
        if item is None:
            rows.append((label, when.format(**facts), "0 (skipped: longer than map_tokens)",
                         "-", "-", "0"))  # fmt: skip
            continue
        attention = f"{item['attention_calls']} of {item['model_calls'] * result['n_layers']}"
        rows.append((
            label, when.format(**facts), item["model_calls"], attention,
            f"{statistics.median(item['cpu_s']):.2f} s", f"{equivalents(item):.2f}",
        ))  # fmt: skip
    return rows


def extra_passes_section(ctx: Any) -> Section:
    """9b. The passes a study makes besides the sentence's own, each with its cost."""
    from benchmarks.sections import TITLES
    from benchmarks.workers import run_worker

    section = Section(TITLES["extra passes"])
    lengths = QUICK_LENGTHS if ctx.quick else EXTRA_LENGTHS
    base = {
        "model_dir": model_dir(ctx.model),
        "model": ctx.model,
        "threads": THREADS,
        "repeats": min(ctx.repeats, 3),
    }
    work = ctx.work / "peers"
    work.mkdir(exist_ok=True)
    results = {}
    for n in lengths:
        ids_file = work / f"extra-ids-{n}.json"
        ids_file.write_text(json.dumps(bench_ids(ctx, n)), encoding="utf-8")
        results[n] = run_worker("extra_passes", {**base, "ids_file": str(ids_file)}).result
    first = next(iter(results.values()))
    section.add(
        "What a study runs besides each sentence's own pass, on one input of N tokens (the "
        "bench prose), in one process with torch on 1 thread. Each is timed in CPU seconds "
        "back to back with the plain SDPA pass on the same input "
        f"({base['repeats']} pairs after one untimed call, which also counts the model's "
        "calls and the attention layers that ran: a grid replays the blocks before its "
        "layer, so they run no attention); *pass-equivalents* is the median of the per-pair "
        f"ratios. The grids are at layer {first['layer']} of {first['n_layers']}, the one the "
        "study picks (strongest pooled first-token focus on this input). The value norms "
        "are read in the sentence's own pass and make none.",
        "",
    )
    header = ("Pass", "When a study runs it", "Model calls", "Attention layers run", "CPU (median)",
              "Pass-equivalents")  # fmt: skip
    for n, result in results.items():
        section.add(f"**{n} tokens** (peak RSS of the process {result['peak_rss_mb']:.0f} MiB, "
                    "two models loaded):", "")  # fmt: skip
        section.table(header, extra_rows(result))
    at = results.get(GRIDS_TARGET_TOKENS)
    what = f"Scaling and mean grids together at {GRIDS_TARGET_TOKENS} tokens"
    if at is not None and at["items"].get("both grids"):
        value = equivalents(at["items"]["both grids"])
        section.judge(ratio_target(what, value, GRIDS_LIMIT, "pass-equivalents", not ctx.quick))
    else:
        section.judge(Target(what, "not measured", f"<= {GRIDS_LIMIT:g} pass-equivalents", None))
    return section
