"""The set's extra passes (BOS contrast, value norms, probes) run once per loaded model and
input: ``serve --watch`` rebuilds the set files on every save without running them again
for sentences that did not change."""

from __future__ import annotations

import gc

import numpy as np

from attnreport import bos_contrast, study, value_norms
from attnreport.config import Settings
from attnreport.pass_memo import keep_passes, remembered
from attnreport.session import open_session


class Model:  # stands in for an nn.Module: hashable, weakly referable
    pass


def test_remembered_computes_once_per_kept_model_and_key_and_forgets_a_dropped_model():
    calls = []
    first, second, plain = Model(), Model(), Model()
    assert remembered(plain, "k", lambda: calls.append(0) or 1) == 1
    assert remembered(plain, "k", lambda: calls.append(0) or 2) == 2  # not kept: computed
    calls.clear()
    keep_passes(first)
    keep_passes(second)
    assert remembered(first, "k", lambda: calls.append(1) or 7) == 7
    assert remembered(first, "k", lambda: calls.append(2) or 8) == 7  # stored value
    assert remembered(second, "k", lambda: calls.append(3) or 9) == 9  # another model
    assert calls == [1, 3]
    del first
    gc.collect()
    again = Model()
    keep_passes(again)
    assert remembered(again, "k", lambda: calls.append(4) or 5) == 5


def test_a_second_set_build_runs_no_extra_pass(tmp_path, tiny_model_dirs, monkeypatch):
    sentences = tmp_path / "s.txt"
    sentences.write_text("the cat chased the mouse\nwhat does attention focus ?\n")
    session = open_session(str(tiny_model_dirs["llama"]), str(sentences), bos="never")
    keep_passes(session.model)  # as serve --watch does for the model it keeps
    settings = Settings()
    tables = (study.bos_contrast(session, settings), value_norms.value_norms(session))
    probes = study.run_probes(session)

    def no_pass(*args, **kwargs):
        raise AssertionError("an extra pass ran again")

    monkeypatch.setattr(bos_contrast, "stream_layers", no_pass)
    monkeypatch.setattr(value_norms, "stream_layers", no_pass)
    monkeypatch.setattr(study, "probe_scores", no_pass)
    again = (study.bos_contrast(session, settings), value_norms.value_norms(session))
    for before, after in zip(tables, again, strict=True):
        for name, column in before.arrays().items():
            np.testing.assert_array_equal(column, after.arrays()[name], err_msg=name)
    assert study.run_probes(session).scores is probes.scores
