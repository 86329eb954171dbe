"""One KL convention for an intervention, everywhere it is printed: the mean over positions
within each sentence, then the mean over sentences (``analyses.kl``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from attnreport.analyses.kl import KL_CONVENTION, KL_NAME, intervention_kl, sentence_kl
from attnreport.multi.folders import results_folders
from attnreport.multi.measures import ModelSide, kl_rows
from attnreport.results import load
from attnreport.site.words.effects import mean_text

SITE = Path(__file__).resolve().parent.parent / "site"


def test_each_sentence_weighs_the_same_whatever_its_length():
    long, short = [1.0, 1.0, 1.0, 1.0], [0.0]
    assert sentence_kl(long) == 1.0 and sentence_kl([]) == 0.0
    assert intervention_kl([long, short]) == pytest.approx(0.5)  # pooled would be 0.8
    assert intervention_kl([]) == 0.0


def test_the_comparison_and_each_models_page_print_the_same_kl():
    """On the committed example: the comparison's bar for each mean-grid cell equals the
    sentence-averaged KL computed independently from the results, and the model page's
    sentence about the mean grid prints that value too."""
    for folder in results_folders([SITE / "results"]):
        results = load(folder)
        mean = results.interventions.mean
        side = ModelSide(
            folder.name, folder.name, results.manifest, results.set, results.interventions
        )
        rows = kl_rows([side])
        bars = dict(zip(rows["cell"], rows["mean_kl"], strict=True))
        for target in {c.target for c in mean.cells}:
            per_sentence = [c.kl for c in mean.cells if c.target == target]
            expected = sum(sum(kl) / len(kl) for kl in per_sentence) / len(per_sentence)
            assert bars[f"{target} mean"] == pytest.approx(expected, abs=1e-6)
        words = mean_text(mean)
        shown = re.findall(r"\b([QKV]) ([0-9.e-]+) nats?\b", words.split(", by ", 1)[-1])
        assert {t for t, _ in shown} == {c.target for c in mean.cells}, words
        for target, value in shown:
            assert float(value) == pytest.approx(bars[f"{target} mean"], rel=0.05)


def test_the_methods_and_the_comparison_name_the_convention():
    pages = [SITE / "index.html", *SITE.glob("*/index.html")]
    for page in pages:
        text = page.read_text(encoding="utf-8").replace("&#39;", "'")
        assert KL_NAME in text, page
        assert KL_CONVENTION.split(":")[0] in text, page
