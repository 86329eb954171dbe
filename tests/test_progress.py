"""Warnings logged while the progress is drawn land above it, whole (never overdrawn),
and the logger's own handlers come back afterwards."""

from __future__ import annotations

import io
import logging

from rich.console import Console

from attnreport.corpus.progress import RichProgress

WARNING = (
    "figure bias-vs-position: no static image, its default view has 90000 rows / "
    "5000000 bytes (bound 50000 rows / 4000000 bytes)"
)


def test_a_warning_prints_above_the_progress_whole():
    logger = logging.getLogger("attnreport")
    before = list(logger.handlers)
    drawn = io.StringIO()
    progress = RichProgress()
    progress.progress.live.console = Console(file=drawn, force_terminal=True, width=60)
    with progress:
        progress("capture", 0, 2)
        logging.getLogger("attnreport.charts.export.images").warning(WARNING)
        progress("capture", 1, 2)
    assert logger.handlers == before
    text = drawn.getvalue()
    assert f"warning: {WARNING}" in text  # one piece, longer than the 60-column terminal
    assert text.index("warning:") < text.rindex("Capturing sentences")  # progress drawn after


def test_capture_reports_the_layers_of_each_sentence(tmp_path, tiny_model_dirs):
    """Within a sentence, every layer is reported as it is analysed (1..L of L), before the
    sentence counts as captured; the drawn progress keeps its stages."""
    from attnreport.config import load_settings
    from attnreport.corpus import CorpusOptions, run_corpus
    from attnreport.models.loading import load_model

    sentences = tmp_path / "s.txt"
    sentences.write_text("the cat sat on the mat\nthe dog chased a mouse\n")
    model = str(tiny_model_dirs["llama"])
    n_layers = load_model(model).model.config.num_hidden_layers
    calls: list[tuple[str, int, int]] = []
    settings = load_settings(
        None, {"model": model, "sentences": str(sentences), "out": str(tmp_path / "o")}
    )
    run_corpus(settings, CorpusOptions(), progress=lambda *call: calls.append(call))
    capture = [c for c in calls if c[0].startswith("capture")]
    layers = [(done, total) for stage, done, total in capture if stage == "capture:layers"]
    assert layers == [(k, n_layers) for k in range(1, n_layers + 1)] * 2
    first_done = capture.index(("capture", 1, 2))
    assert capture[first_done - 1] == ("capture:layers", n_layers, n_layers)

    progress = RichProgress()
    progress.progress.live.console = Console(file=io.StringIO(), force_terminal=True)
    with progress:
        for call in calls:
            progress(*call)
        stages = [progress.progress.tasks[t].description for t in progress.tasks.values()]
    assert "  layers of the sentence(s) in flight" in stages and "Capturing sentences" in stages
