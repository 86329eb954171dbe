"""Progress a log can read: off a terminal, plain lines at each stage and every tenth or
30 s with a rate and the time left, flushed as they are printed; and before a long input,
one line with its tokens and the time it will take, at a measured rate."""

from __future__ import annotations

import io
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from attnreport.cli import main
from attnreport.corpus import estimate
from attnreport.corpus.estimate import LongInputs, long_line
from attnreport.corpus.plain_progress import PlainProgress, duration
from attnreport.sentences import Sentence
from tests.patience import patience
from tests.tiny_models import save_byte_model


class Flushed(io.StringIO):
    """A stream that records what had been written at each flush."""

    def __init__(self) -> None:
        super().__init__()
        self.flushes: list[str] = []

    def flush(self) -> None:
        self.flushes.append(self.getvalue())


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_stages_tenths_and_half_minutes_with_a_rate_and_the_time_left():
    stream, clock = Flushed(), Clock()
    with PlainProgress(stream, clock) as progress:
        progress("load", 0, 1)
        clock.now = 5.0
        progress("capture", 0, 40)
        for done in range(1, 41):
            clock.now += 2.0  # a sentence every 2 s
            progress("capture", done, 40)
        clock.now += 1.0
        progress("interventions", 0, 1)
        progress("interventions:passes", 1, 10)
        clock.now += 31.0  # one pass took 31 s: a line although no tenth was passed
        progress("interventions:passes", 2, 10)
    lines = stream.getvalue().splitlines()
    assert lines[:3] == ["Loading model", "Loading model: done in 5 s", "Capturing sentences: 0 of 40"]  # fmt: skip
    counts = [line for line in lines if line.startswith("Capturing sentences: ") and "%" in line]
    assert len(counts) == 10  # 4, 8, ... 40: one per tenth, not one per sentence
    assert counts[0] == "Capturing sentences: 4 of 40 (10%), 2 s each, about 1 min 12 s left"
    assert counts[-1] == "Capturing sentences: 40 of 40 (100%), 2 s each"
    assert "Capturing sentences: done in 1 min 21 s" in lines  # until the next stage
    assert "  forward passes of the grids: 2 of 10 (20%), 31 s each, about 4 min 8 s left" in lines
    assert lines[-1] == "Running interventions: done in 31 s"
    assert len(stream.flushes) == len(lines)  # every line flushed as it is printed
    assert [f.count("\n") for f in stream.flushes] == list(range(1, len(lines) + 1))


def test_a_row_restarts_with_each_sentence():
    stream, clock = Flushed(), Clock()
    progress = PlainProgress(stream, clock)
    progress("capture", 0, 2)
    for sentence in range(2):
        for layer in range(1, 11):
            clock.now += 10.0 * (sentence + 1)  # the second sentence is twice as slow
            progress("capture:layers", layer, 10)
        progress("capture", sentence + 1, 2)
    rows = [line for line in stream.getvalue().splitlines() if line.startswith("  layers")]
    assert rows[0] == "  layers of the sentence(s) in flight: 2 of 10 (20%), 10 s each, about 1 min 20 s left"  # fmt: skip
    assert "  layers of the sentence(s) in flight: 2 of 10 (20%), 20 s each, about 2 min 40 s left" in rows  # fmt: skip


def test_durations_read_as_a_person_would_say_them():
    assert [duration(s) for s in (0.4, 42, 185, 7440)] == ["0 s", "42 s", "3 min 5 s", "2 h 4 min"]


def test_a_long_input_is_announced_at_the_rate_the_run_measured(caplog):
    """The rate is this run's: tokens per second over the sentences finished before."""
    clock = Clock()
    inputs = LongInputs(clock)
    short = Sentence(0, "x", tuple(range(100)), ("x",) * 100)
    long = Sentence(1, "y", tuple(range(5000)), ("y",) * 5000)
    with caplog.at_level("WARNING", logger="attnreport.corpus.estimate"):
        inputs.next(long)  # nothing measured yet
        clock.now = 8.0
        inputs.finished(long)
        inputs.next(short)  # short: not announced
        clock.now = 10.0
        inputs.finished(short)
        inputs.next(long)
    lines = [r.getMessage() for r in caplog.records]
    assert lines[0] == (
        "sentence 2 has 5,000 tokens: the time it takes is shown once its first layer is "
        "done; past 4,096 tokens, a shorter input, or a GPU (--device cuda), is much quicker"
    )
    assert len(lines) == 2  # 5,100 tokens in 10 s: 510 tokens/s, 5,000 tokens in 9.8 s
    assert lines[1].startswith("sentence 2 has 5,000 tokens: about 10 s at this run's rate so far (510 tokens/s")  # fmt: skip


def test_a_long_line_under_the_note_size_has_no_note():
    sentence = Sentence(0, "x", tuple(range(2000)), ("x",) * 2000)
    assert long_line(sentence, 20.0) == (
        "sentence 1 has 2,000 tokens: about 1 min 40 s at this run's rate so far "
        "(20 tokens/s; its own shows once its first layer is done)"
    )


@pytest.fixture(scope="module")
def byte_model(tmp_path_factory):
    return save_byte_model(tmp_path_factory.mktemp("byte-model") / "gpt2-bytes")


def test_analyze_announces_a_long_input_before_it_starts(tmp_path, byte_model, monkeypatch):
    """The threshold scaled down to the tiny byte model (512 positions, a token a byte):
    the long input comes second, so the first one's rate gives its estimate."""
    monkeypatch.setattr(estimate, "LONG_TOKENS", 64)
    sentences = tmp_path / "s.txt"
    sentences.write_text("short one\n" + "a long line of text, " * 5 + "\n")  # 104 bytes stripped
    args = ["analyze", "--model", str(byte_model), "--sentences", str(sentences)]
    result = CliRunner().invoke(main, [*args, "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    announced = [i for i, line in enumerate(lines) if "has 104 tokens" in line]
    assert len(announced) == 1, result.output
    assert lines[announced[0]].startswith("warning: sentence 2 has 104 tokens: about ")
    assert "at this run's rate so far" in lines[announced[0]]
    assert not any("has 9 tokens" in line for line in lines)  # a short input is not announced
    assert announced[0] < next(i for i, line in enumerate(lines) if line.startswith("wrote "))


@pytest.mark.slow
def test_a_run_off_a_terminal_prints_its_progress_as_it_goes(tmp_path, tiny_model_dirs):
    """``analyze`` with stdout a pipe (as on a CI runner): progress lines arrive while the
    run is still going, then the closing line."""
    sentences = tmp_path / "two.txt"
    sentences.write_text("the cat chased the mouse\nwhat does attention focus ?\n")
    command = [sys.executable, "-m", "attnreport.cli", "analyze", "--out", str(tmp_path / "o")]
    command += ["--model", str(tiny_model_dirs["llama"]), "--sentences", str(sentences)]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env
    ) as child:
        assert child.stdout is not None
        first = child.stdout.readline()
        running = child.poll() is None  # the model load follows this line: seconds of work
        rest = child.stdout.read().splitlines()
        assert child.wait(timeout=patience(600)) == 0
    assert first == "Loading model\n" and running
    assert "Capturing sentences: 0 of 2" in rest and "Capturing sentences: 2 of 2 (100%)" in "\n".join(rest)  # fmt: skip
    assert rest[-1].startswith("wrote ") and any(line.startswith("Running interventions") for line in rest)  # fmt: skip


def test_the_cli_picks_plain_lines_off_a_terminal():
    if sys.stderr.isatty():
        pytest.skip("stderr is a terminal here")
    from attnreport.corpus.plain_progress import progress_display

    assert isinstance(progress_display(), PlainProgress)


def test_plain_progress_has_every_stage_rich_has():
    from attnreport.corpus.plain_progress import STAGES
    from attnreport.corpus.progress import RichProgress

    assert RichProgress.LABELS is STAGES


@pytest.mark.slow
def test_the_commands_quieten_the_gguf_readers_own_bar():
    """transformers' GGUF reader draws a tqdm bar of its own (not through its logging
    switch); after ``quiet_libraries`` that very bar is disabled."""
    code = (
        "import io\n"
        "from attnreport.cli import quiet_libraries\n"
        "quiet_libraries()\n"
        "from transformers.modeling_gguf_pytorch_utils import tqdm\n"
        "out = io.StringIO()\n"
        "bar = tqdm(range(3), desc='Converting and de-quantizing GGUF tensors...', file=out)\n"
        "list(bar)\n"
        "print(bar.disable, repr(out.getvalue()))\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TQDM_DISABLE")}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=patience(300)
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "True ''"


def test_rows_done_in_seconds_print_nothing_but_the_stage_still_counts():
    """208 short sentences: their layers take a second each sentence, so a log shows the
    sentences' tenths and no line per layer; the BOS contrast's sentences likewise."""
    stream, clock = Flushed(), Clock()
    with PlainProgress(stream, clock) as progress:
        progress("capture", 0, 208)
        for sentence in range(208):
            for layer in range(1, 31):
                clock.now += 0.04
                progress("capture:layers", layer, 30)
            progress("capture", sentence + 1, 208)
        progress("interventions", 0, 1)
        for done in range(1, 209):
            clock.now += 0.5
            progress("interventions:contrast", done, 208)
    lines = stream.getvalue().splitlines()
    assert not [line for line in lines if line.startswith("  layers")]
    assert len([line for line in lines if line.startswith("Capturing sentences: ")]) == 12
    contrast = [line for line in lines if line.startswith("  sentences captured in the other")]
    assert contrast and contrast[-1].startswith(
        "  sentences captured in the other BOS condition: 208 of 208 (100%)"
    )
