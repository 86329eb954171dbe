"""``python -m benchmarks --quick`` must keep working: every section, with numbers.

Nothing here checks a timing; the quick run only proves the script still measures and
writes every section. The unit tests cover the report pieces without a model.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import peers
from benchmarks.peers import LengthRuns, PeerRun, PeersEnv
from benchmarks.report import KEEP_MARKER, Section, kept_notes, ratio_target, render
from benchmarks.sections import TITLES
from tests.browser import chromium_path
from tests.patience import patience
from tests.tiers import extended

ROOT = Path(__file__).resolve().parent.parent
HEADINGS = ("Targets", "Machine", *TITLES.values(), "Profile", "Reproduce")
MEASURED = tuple(TITLES.values())  # the seven sections that must hold numbers


def _sections(text: str) -> dict[str, str]:
    """Heading -> body of every ``##`` section."""
    parts = re.split(r"^## (.+)$", text, flags=re.MULTILINE)
    return {parts[i].strip(): parts[i + 1] for i in range(1, len(parts) - 1, 2)}


needs_chromium = pytest.mark.skipif(chromium_path() is None, reason="Chromium is not installed")


def quick_bench(tmp_path: Path, model: Path, *only: str) -> tuple[str, dict[str, str], Path]:
    """``python -m benchmarks --quick`` on ``model`` (``--only`` the sections named, if any),
    with no peers venv (as on a fresh machine: quick mode installs none): its text, its
    sections by heading, and its kept scratch folder."""
    out, work = tmp_path / "bench.md", tmp_path / "work"
    command = ["--quick", "--model", str(model), "--peers-venv", str(tmp_path / "no-venv")]
    if only:
        command += ["--only", ",".join(only)]
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks", *command, "--out", str(out), "--workdir", str(work)],
        capture_output=True,
        text=True,
        timeout=patience(900),
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    text = out.read_text(encoding="utf-8")
    return text, _sections(text), work


def assert_measured(sections: dict[str, str], heading: str) -> None:
    body = sections[heading]
    assert "**Failed**" not in body, body
    assert re.search(r"\d+\.\d+ (s|ms|MB|MiB|x|passes)", body), f"no numbers in {heading!r}"


@pytest.mark.slow
def test_quick_bench_measures_the_sections_it_is_asked_for(tmp_path, tiny_model_dirs):
    """The landing suite's run of the bench: two sections of the quick run (the study's own
    pass against the model's, and the passes it makes besides), on a tiny random-weight
    Llama (``--model``: what is measured is the script, not a model)."""
    model = tiny_model_dirs["llama"]
    text, sections, _ = quick_bench(tmp_path, model, "capture", "extra-passes")
    for name in ("capture", "extra passes"):
        assert_measured(sections, TITLES[name])
    assert "`--only capture,extra-passes`" in text and f"- {TITLES['build']}" in text
    assert f"| Model measured (`--model`) | {model} |" in sections["Machine"]
    assert KEEP_MARKER in text


@pytest.mark.slow
@pytest.mark.browser
@needs_chromium
@extended("tests/test_bench.py::test_quick_bench_measures_the_sections_it_is_asked_for")
def test_quick_bench_writes_every_section_with_numbers(tmp_path, tiny_model_dirs):
    """Every section of the quick run, so the run is the same on any machine."""
    model = tiny_model_dirs["llama"]
    text, sections, work = quick_bench(tmp_path, model)
    for heading in HEADINGS:
        assert heading in sections, f"missing section {heading!r}"
    for heading in MEASURED:
        assert_measured(sections, heading)
    assert "not judged" in sections["Targets"]
    assert f"| Model measured (`--model`) | {model} |" in sections["Machine"]
    assert "did not run**: no peers venv" in sections[TITLES["peers"]]
    # attnreport against both plain passes, the last-position one measured too
    assert re.search(r"\| 16 \| \d+\.\d+x \| \d+\.\d+x \|", sections[TITLES["peers"]])
    assert KEEP_MARKER in text
    assert (work / "site-example" / "index.html").is_file(), "--workdir keeps the scratch files"


@pytest.mark.parametrize("command", [["-m", "benchmarks"], ["benchmarks/run.py"]])
def test_bench_runs_from_the_repository_root_as_module_or_script(command):
    done = subprocess.run(
        [sys.executable, *command, "--help"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=patience(120),
    )
    assert done.returncode == 0, done.stderr
    assert "--quick" in done.stdout and "--workdir" in done.stdout


def test_ratio_target_says_by_how_much_it_missed():
    missed = ratio_target("load", 4.5, 3.0, "s", judged=True)
    assert missed.met is False
    assert "1.50 s" in missed.miss and "1.5x" in missed.miss
    assert ratio_target("load", 2.0, 3.0, "s", judged=True).status() == "met"
    assert ratio_target("load", 9.0, 3.0, "s", judged=False).status() == "not judged"


def test_render_lists_targets_first_and_keeps_hand_written_notes(tmp_path):
    section = Section("1. Something")
    section.table(("a", "b"), [(1, "2.00 s")])
    section.judge(ratio_target("thing", 2.0, 1.0, "s", judged=True))
    path = tmp_path / "BENCHMARKS.md"
    path.write_text(render("Benchmarks", ["intro"], [section], "", quick=False), encoding="utf-8")
    path.write_text(path.read_text() + "## Notes\n\nWhat it would take.\n", encoding="utf-8")
    again = render("Benchmarks", ["intro"], [section], kept_notes(path), quick=False)
    assert again.index("## Targets") < again.index("## 1. Something")
    assert "**missed** by 1.00 s" in again
    assert again.rstrip().endswith("What it would take.")
    assert again.count(KEEP_MARKER) == 1


# --- section 9: the peers (no model, no venv made: the pieces of the logic) -----------


def test_peers_venv_commands_never_use_the_projects_interpreter(tmp_path):
    venv = tmp_path / "peers-venv"
    commands = peers.install_commands(venv, gpu=False)
    made, *installs = [command for _what, command in commands]
    assert made[:3] == [sys.executable, "-m", "venv"] and made[-1] == str(venv)
    for command in installs:  # every pip runs inside the throwaway venv, not this one
        assert command[0] == str(peers.venv_python(venv)) != sys.executable
        assert command[1:3] == ["-m", "pip"]
    torch = next(c for what, c in commands if what == "torch")
    assert "-c" in torch and torch[torch.index("-c") + 1] == str(peers.CONSTRAINTS)
    assert torch[-4:] == ["--retries", "0", "--timeout", "5"]  # PyTorch's index: no waiting
    peer_installs = [c for what, c in commands if what in peers.PEER_IMPORTS]
    assert [c[-1] for c in peer_installs] == list(peers.PEER_REQUIREMENTS)
    assert all("-c" in c for c in peer_installs)  # torch stays at the pinned version
    assert "torch" not in [what for what, _c in peers.install_commands(venv, gpu=True)]


def test_peer_tools_run_under_the_peers_venv_and_ours_under_this_python(tmp_path):
    env = PeersEnv(str(tmp_path / "venv" / "bin" / "python"))
    pythons = peers.tool_pythons(env)
    assert set(pythons) == set(peers.TOOLS)
    for tool in peers.PEER_IMPORTS:
        assert pythons[tool] == env.python != sys.executable
    for tool in ("plain", "eager", "attnreport"):
        assert pythons[tool] == sys.executable
    command = peers.worker_command(pythons["transformer_lens"], "transformer_lens", tmp_path / "a")
    assert command[0] == env.python and command[1:3] == ["-m", "benchmarks.peer_tasks"]


def test_peers_env_refuses_the_projects_environment(monkeypatch):
    def never(*_args, **_kwargs):
        raise AssertionError("nothing may be installed into the project's environment")

    monkeypatch.setattr(peers, "make_venv", never)
    for venv in (Path(sys.prefix), Path(sys.prefix) / "peers", Path(sys.prefix).parent):
        assert peers.is_project_env(venv)
        env = peers.ensure_peers_env(venv, install=True)
        assert env.python is None and set(env.missing) == set(peers.PEER_IMPORTS)
        assert "project's own environment" in env.missing["bertviz"]


def test_peers_env_is_made_when_missing_or_stale_and_left_alone_otherwise(tmp_path, monkeypatch):
    made = []

    def fake_make(venv, _log):
        made.append(venv)
        peers.venv_python(venv).parent.mkdir(parents=True, exist_ok=True)
        peers.venv_python(venv).write_text("")
        (venv / peers.STAMP).write_text(
            json.dumps({**peers.requirements_stamp(), "complete": True})
        )
        return {"bertviz": "`pip install bertviz==1.4.1` failed: no network"}

    monkeypatch.setattr(peers, "make_venv", fake_make)
    monkeypatch.setattr(peers, "import_problem", lambda _python, _module: "")
    venv = tmp_path / "peers-venv"
    quick = peers.ensure_peers_env(venv, install=False)  # quick mode installs nothing
    assert quick.python is None and "installs nothing" in quick.missing["transformer_lens"]
    assert made == []
    env = peers.ensure_peers_env(venv, install=True)
    assert made == [venv] and env.python == str(peers.venv_python(venv))
    assert env.missing == {"bertviz": "`pip install bertviz==1.4.1` failed: no network"}
    assert peers.ensure_peers_env(venv, install=True).note == "reused" and len(made) == 1
    (venv / peers.STAMP).write_text(json.dumps({"requirements": ["bertviz==0.1"]}))
    peers.ensure_peers_env(venv, install=True)  # stale: made again
    assert len(made) == 2
    other = tmp_path / "someone-elses"
    other.mkdir()
    (other / "notes.txt").write_text("keep me")
    assert peers.ensure_peers_env(other, install=True).python is None
    assert (other / "notes.txt").is_file() and len(made) == 2


def _run(tool, n, cpu, peak, failure=""):
    result = None if failure in ("killed", "timed out") else {"cpu_s": [cpu], "peak_rss_mb": peak}
    if failure == "oom":
        result = {"peak_rss_mb": peak, "memory_limit_bytes": 12 * 2**30}
    return PeerRun(tool, n, result, failure)


def test_peer_tables_give_ratios_to_the_mean_plain_pass_and_name_every_failure():
    runs = LengthRuns(64, [_run("plain", 64, 1.0, 1000), _run("plain", 64, 3.0, 1000)])
    runs.tools = {
        "plain_last": _run("plain_last", 64, 1.6, 1000),
        "eager": _run("eager", 64, 3.0, 1500),
        "attnreport": _run("attnreport", 64, 4.0, 1100),
        "transformer_lens": _run("transformer_lens", 64, 0, 13000, "oom"),
        "bertviz": PeerRun("bertviz", 64, None, "not installed: cannot import bertviz: x|y"),
    }
    cpu = peers.cpu_rows([runs])[0]
    assert cpu[:5] == (64, "2.00 s (1.00 / 3.00)", "0.80x (1.60 s)", "1.50x (3.00 s)", "2.00x (4.00 s)")  # fmt: skip
    assert cpu[5].startswith("out of memory (peak 12.7 GiB, cap 12.0 GiB)")
    assert cpu[6] == "not installed: cannot import bertviz: x/y"  # no stray table column
    rss = peers.rss_rows([runs])[0]
    assert rss[:5] == (64, "1000 MiB", "1.00x (1000 MiB)", "1.50x (1500 MiB)", "1.10x (1100 MiB)")
    assert len(peers.header("x")) == len(cpu) == len(rss)
    # attnreport against the plain pass (the targets' unit) and against the pass that
    # keeps the last position's logits only, as attnreport's own does
    assert peers.like_for_like_rows([runs]) == [(64, "2.00x", "2.50x")]
    runs.tools.pop("plain_last")
    assert peers.like_for_like_rows([runs]) == [(64, "2.00x", "-")]


def test_a_tool_out_of_memory_or_time_is_not_run_at_longer_lengths(tmp_path):
    calls = []

    def runner(python, tool, args, _work):
        calls.append((tool, args["n_tokens"], python))
        if tool == "transformer_lens" and args["n_tokens"] >= 1024:
            return _run(tool, args["n_tokens"], 0, 9000, "oom")
        if tool == "eager" and args["n_tokens"] >= 1024:
            return _run(tool, args["n_tokens"], 0, 0, "error: boom")
        return _run(tool, args["n_tokens"], 1.0, 900)

    pythons = {t: f"python-{t}" for t in peers.TOOLS}
    missing = {"bertviz": "cannot import bertviz"}
    out = peers.measure_peers(
        (512, 1024, 2048), pythons, missing, {}, lambda n: [1] * n, tmp_path, 5, runner=runner
    )
    assert [r.n_tokens for r in out] == [512, 1024, 2048]
    assert ("transformer_lens", 2048, "python-transformer_lens") not in calls
    assert ("eager", 2048, "python-eager") in calls  # an ordinary error stops nothing
    assert not any(tool == "bertviz" for tool, _n, _p in calls)
    assert out[2].tools["transformer_lens"].failure == "not run: oom at 1024 tokens"
    assert out[0].tools["bertviz"].failure == "not installed: cannot import bertviz"
    at_512 = [tool for tool, n, _p in calls if n == 512]
    assert at_512 == ["plain", "plain_last", "eager", "attnreport", "transformer_lens", "plain"]
    assert len(out[0].plain) == 2
    assert json.loads((tmp_path / "peer-ids-512.json").read_text()) == [1] * 512


def test_peer_targets_judge_the_worst_ratio_from_64_tokens_and_rss_at_2048_and_8192():
    def length(n, ours_cpu, ours_peak):
        runs = LengthRuns(n, [_run("plain", n, 1.0, 1000)])
        runs.tools["attnreport"] = _run("attnreport", n, ours_cpu, ours_peak)
        return runs

    runs = [length(32, 9.0, 1000), length(64, 1.3, 1000), length(2048, 1.4, 1500)]
    runs.append(length(8192, 3.0, 1300))  # past 2048: its CPU is not judged, its RSS is
    cpu, goal, rss, rss_long = peers.peer_targets(runs, judged=True)
    assert cpu.measured == "1.40 x" and cpu.met  # 32 and 8192 tokens are outside 64-2048
    assert goal.met is False and "1.2x the limit" in goal.miss
    assert "2048 tokens" in rss.what and rss.measured == "1.50 x" and rss.met is False
    assert "8192 tokens" in rss_long.what and rss_long.measured == "1.30 x" and rss_long.met
    assert all(t.met is None for t in peers.peer_targets(runs, judged=False))
    assert peers.peer_targets(runs[:1], judged=True)[0].met is None  # 2048 never ran
    unrun = peers.peer_targets(runs[:3], judged=True)[-1]  # no 8192 run: not measured
    assert "8192" in unrun.what and unrun.measured == "not measured" and unrun.met is None


def test_extra_pass_rows_name_each_pass_and_its_cost():
    item = {
        "model_calls": 12,
        "attention_calls": 96,
        "cpu_s": [6.0, 8.0],
        "plain_cpu_s": [1.0, 2.0],
    }
    result = {
        "n_layers": 30,
        "plan": {"unmodified": 1, "scaling": 6, "mean": 3, "mean before rotation": 2},
        "probes": [10, 100],
        "map_tokens": 256,
        "items": {"both grids": item, "BOS contrast": None},
    }
    rows = {row[0].split(":")[0]: row for row in peers.extra_rows(result)}
    assert rows["both grids"][2:] == (12, "96 of 360", "7.00 s", "5.00")
    assert rows["BOS contrast"][2].startswith("0 (skipped")
    assert "256" in rows["BOS contrast"][1]
    assert rows["scaling grid"][0] == "scaling grid: 1 unmodified pass + 6 cells"


def test_model_names_what_is_measured_and_where_every_tool_loads_it(tiny_model_dirs):
    from benchmarks.run import parse_args
    from benchmarks.sections import Context

    assert parse_args([]).model == "default"
    assert parse_args(["--model", "gemma-3-270m"]).model == "gemma-3-270m"
    folder = tiny_model_dirs["llama"]
    assert peers.model_dir(str(folder)) == str(folder.resolve())  # a folder: itself
    assert peers.model_dir("some-org/some-model") == "some-org/some-model"  # a Hub id
    context = Context(quick=True, repeats=1, work=folder, sentences_file=None,
                      bertviz_python=None, model=str(folder))  # fmt: skip
    assert context.model_words() == f"the model `{folder}`"
    assert Context(True, 1, folder, None, None).model_words() == "the default model"


def test_only_names_sections_and_refuses_unknown_ones():
    from benchmarks.run import SECTION_NAMES, parse_args

    assert set(SECTION_NAMES) == set(TITLES)
    assert parse_args(["--only", "peers,extra-passes"]).only == ("peers", "extra passes")
    with pytest.raises(SystemExit):
        parse_args(["--only", "nothing"])


def test_a_run_with_only_says_which_sections_it_left_out():
    from benchmarks.run import left_out_section

    text = left_out_section(("capture", "peers")).markdown()
    assert "`--only capture,peers`" in text
    assert f"- {TITLES['build']}" in text and TITLES["peers"] not in text


def test_peer_versions_say_what_each_environment_ran():
    def run(tool, transformers, version=""):
        result = {"cpu_s": [1.0], "peak_rss_mb": 1.0, "torch": "2.13.0+cpu"}
        return PeerRun(tool, 32, {**result, "transformers": transformers, "version": version})

    runs = LengthRuns(32, [run("plain", "5.24.0")])
    runs.tools = {"transformer_lens": run("transformer_lens", "5.23.0", "4.3.0")}
    text = peers.peers_versions([runs])
    assert "TransformerLens 4.3.0" in text
    assert "transformers 5.24.0 in the project's environment" in text
    assert "transformers 5.23.0 in the peers venv" in text
