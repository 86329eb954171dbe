"""Progress within the interventions: every forward pass of the grids is reported (1..N of
N, N counted from the grids the results hold), after the interventions stage starts and
before the run ends; the drawn row carries an estimate, and warnings land above it whole."""

from __future__ import annotations

import io
import logging

import torch
from rich.console import Console

from attnreport.corpus.progress import RichProgress
from attnreport.corpus.run import PASSES
from attnreport.pass_count import counting_passes

WARNING = "figure bias-vs-position: no static image, its default view has 90000 rows"


def _grid_passes(interventions) -> int:
    """Forward passes the results' grids took, counted from what they hold: one unmodified
    pass per input (the grids share it), and one per cell of each grid."""
    mean = interventions.mean
    inputs = {*interventions.scaling.inputs, *mean.sentences}
    return (
        len(inputs) + len(interventions.scaling.cells) + len(mean.cells) + len(mean.before_rotation)
    )


def test_the_interventions_report_every_pass(tmp_path, tiny_model_dirs):
    from attnreport.config import load_settings
    from attnreport.corpus import CorpusOptions, run_corpus
    from attnreport.results import load

    sentences = tmp_path / "s.txt"
    sentences.write_text("the cat sat on the mat\nthe dog chased a mouse\n")
    calls: list[tuple[str, int, int]] = []
    settings = load_settings(
        None,
        {"model": str(tiny_model_dirs["llama"]), "sentences": str(sentences),
         "out": str(tmp_path / "o")},
    )  # fmt: skip
    run_corpus(settings, CorpusOptions(), progress=lambda *call: calls.append(call))
    grids = load(tmp_path / "o").interventions
    n = _grid_passes(grids)
    assert grids.mean.before_rotation  # llama rotates q and k: those passes are counted too
    passes = [(done, total) for stage, done, total in calls if stage == PASSES]
    assert passes == [(k, n) for k in range(1, n + 1)]
    stages = [stage for stage, _, _ in calls]
    assert stages.index("interventions") < stages.index(PASSES)

    progress = RichProgress()
    drawn = io.StringIO()
    progress.progress.live.console = Console(file=drawn, force_terminal=True, width=60)
    with progress:
        for call in calls:
            progress(*call)
            if call == (PASSES, 2, n):
                logging.getLogger("attnreport.charts.export.images").warning(WARNING)
        rows = {progress.progress.tasks[t].description: t for t in progress.tasks.values()}
        row = progress.progress.tasks[rows["  forward passes of the grids"]]
        assert (row.completed, row.total) == (n, n)
    text = drawn.getvalue()
    assert f"warning: {WARNING}" in text  # whole, though longer than the terminal is wide
    assert text.index("warning:") < text.rindex("forward passes of the grids")


def test_the_pass_hook_is_removed_even_when_a_pass_fails():
    model = torch.nn.Linear(2, 2)
    heard: list[tuple[int, int]] = []
    with counting_passes(model, 3, lambda *c: heard.append(c)):
        model(torch.zeros(2))
        model(torch.zeros(2))
    try:
        with counting_passes(model, 3, lambda *c: heard.append(c)):
            model(torch.zeros(3))  # wrong width: the pass raises before its hook runs
    except RuntimeError:
        pass
    model(torch.zeros(2))
    assert heard == [(1, 3), (2, 3)] and not model._forward_hooks


def test_the_pass_count_holds_for_a_model_without_rotary(tmp_path, tiny_model_dirs):
    """GPT-2's learned positions: no before-rotation cells, so fewer passes, still all
    counted, and the total given up front is the count."""
    from attnreport.config import load_settings
    from attnreport.pass_count import intervention_passes
    from attnreport.session import session_for
    from attnreport.study import intervention_results

    sentences = tmp_path / "s.txt"
    sentences.write_text("the cat sat on the mat\nthe dog chased a mouse\n")
    settings = load_settings(
        None, {"model": str(tiny_model_dirs["gpt2"]), "sentences": str(sentences)}
    )
    session = session_for(settings)
    total = intervention_passes(session, settings, 1)
    heard: list[tuple[int, int]] = []
    with counting_passes(session.model, total, lambda *c: heard.append(c)):
        grids = intervention_results(session, settings, 1)
    assert not grids.mean.before_rotation
    n = _grid_passes(grids)
    assert total == n and heard == [(k, n) for k in range(1, n + 1)]
