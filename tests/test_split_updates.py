"""Each head's update size split by its top key (the source blog's claim in its own
scope): known answers on hand-made tables and the set table of a tiny model against
medians recomputed from a plain capture."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from click.testing import CliRunner

from attnreport.analyses.split_updates import split_updates
from attnreport.capture import capture_attention
from attnreport.cli import main
from attnreport.models import load_model
from attnreport.models.layout import discover
from attnreport.results import load


def _tables(top_keys, sizes):
    """top and head_impact of one layer from (head, query) lists."""
    n_heads, n = len(top_keys), len(top_keys[0])
    keys = {
        "layer": np.zeros(n_heads * n, dtype=np.int64),
        "head": np.repeat(np.arange(n_heads), n),
        "query": np.tile(np.arange(n), n_heads),
    }
    top = {**keys, "top_key": np.array(top_keys).reshape(-1)}
    return top, {**keys, "magnitude": np.array(sizes, dtype=float).reshape(-1)}


def test_medians_split_by_the_top_key_leave_query_0_out():
    # head 0: queries 1-4 look at 0, 0, 2, 3 (query 0 always does, and is not counted)
    # head 1: no query but 0 looks at the first token
    top, impact = _tables(
        [[0, 0, 0, 2, 3], [0, 1, 2, 3, 4]],
        [[9.0, 0.1, 0.3, 2.0, 4.0], [9.0, 1.0, 2.0, 3.0, 5.0]],
    )
    split = split_updates(top, impact)
    assert split["head"].tolist() == [0, 1] and split["layer"].tolist() == [0, 0]
    assert split["first_update"].tolist() == pytest.approx([0.2, 0.0])  # median of 0.1, 0.3
    assert split["other_update"].tolist() == pytest.approx([3.0, 2.5])  # of 2, 4; of 1, 2, 3, 5


def test_rows_that_do_not_line_up_are_refused():
    top, impact = _tables([[0, 0, 1]], [[1.0, 1.0, 1.0]])
    impact["query"] = impact["query"][::-1].copy()
    with pytest.raises(ValueError, match="same"):
        split_updates(top, impact)


def test_the_set_table_matches_medians_of_a_plain_capture(tmp_path, tiny_model_dirs):
    sentences = tmp_path / "s.txt"
    sentences.write_text("the cat chased the mouse and the dog\nwhat does attention focus on ?\n")
    out = tmp_path / "r"
    model_dir = tiny_model_dirs["llama"]
    args = ["analyze", "--out", str(out), "--model", str(model_dir), "--sentences", str(sentences)]
    assert CliRunner().invoke(main, args).exit_code == 0
    table = load(out).set.focus_by_sentence.arrays()
    loaded = load_model(str(model_dir))
    specs = discover(loaded.family, loaded.model)
    checked = 0
    for listed in load(out).manifest.sentences:
        capture = capture_attention(loaded.model, specs, torch.tensor(listed.token_ids))
        for spec in specs:
            record = capture.record(spec.layer)
            size = record.updates.double().norm(dim=-1) / record.x.double().norm(dim=-1)
            top = record.probs.argmax(-1)  # (head, query); ties: the earlier key
            rows = (table["sentence"] == listed.index) & (table["layer"] == spec.layer)
            for h in range(record.n_heads):
                first = size[h, 1:][top[h, 1:] == 0]
                other = size[h, 1:][top[h, 1:] != 0]
                # torch's median is the lower middle value; numpy's averages the two
                want = [float(np.median(v.numpy())) if len(v) else 0.0 for v in (first, other)]
                got = [float(table[c][rows][h]) for c in ("first_update", "other_update")]
                assert got == pytest.approx(want, rel=1e-5, abs=1e-7)
                checked += len(first) > 0 and len(other) > 0
    assert checked > 0  # some head has queries of both kinds
