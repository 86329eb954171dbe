"""A pass's reused buffers (``attnreport.scratch``) change no number.

The blockwise pass writes every block's logits, probabilities and the entropy's centred
scores into the same buffers, block after block and layer after layer. That is only
right if nothing keeps a view of a block past the next one: each streamed pass here is
compared, exactly, with the same pass given a fresh tensor for every request.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from attnreport import streaming
from attnreport.analyses.heads import QueryBlock
from attnreport.analyses.roles import repeat_pairs
from attnreport.analyses.row_reductions import RoleInputs, reduce_block
from attnreport.config import Settings
from attnreport.models import load_model
from attnreport.models.layout import discover
from attnreport.scratch import Scratch
from attnreport.sentence_pass import analyze_pass

TEXT = "the cat chased the mouse and the dog sat on the mat and the cat sat on the dog"


def test_a_name_hands_out_views_of_one_buffer_grown_once_to_its_capacity():
    scratch = Scratch()
    small = scratch.tensor("logits", (2, 3), torch.float32, capacity=40)
    assert small.shape == (2, 3) and small.is_contiguous()
    larger = scratch.tensor("logits", (4, 10), torch.float32)  # within the capacity
    assert larger.data_ptr() == small.data_ptr()
    grown = scratch.tensor("logits", (5, 10), torch.float32)  # past it: a new buffer
    assert grown.shape == (5, 10) and grown.data_ptr() != small.data_ptr()
    assert scratch.tensor("logits", (1, 7), torch.float32).data_ptr() == grown.data_ptr()
    other = scratch.tensor("probs", (1, 7), torch.float32)  # names never share
    double = scratch.tensor("logits", (1, 7), torch.float64)  # nor do dtypes
    assert len({grown.data_ptr(), other.data_ptr(), double.data_ptr()}) == 3
    assert double.dtype == torch.float64


def test_a_reduced_block_keeps_nothing_of_the_block_or_the_scratch():
    torch.manual_seed(0)
    heads, start, stop = 3, 4, 9
    raw = torch.randn(heads, stop - start, stop)
    block = QueryBlock(start, stop, 0)
    scores = raw.masked_fill(~block.allowed(None), torch.finfo(torch.float32).min)
    probs = scores.softmax(-1)
    ids = torch.tensor([5, 6, 5, 7, 6, 5, 8, 7, 5])
    roles = RoleInputs(ids, torch.rand(heads, stop))
    scratch = Scratch()
    out = reduce_block(raw, scores, probs, None, block, 3, None, roles, scratch)
    kept = {name: value.clone() for name, value in out.items()}
    for tensor in (raw, scores, probs, *scratch._flat.values()):
        tensor.fill_(float("nan"))
    assert scratch._flat, "the role values used the scratch: the check is not vacuous"
    for name, value in out.items():
        torch.testing.assert_close(value, kept[name], rtol=0, atol=0, msg=name)
    assert repeat_pairs(ids)[0].numel() > 0  # the sentence repeats tokens: duplicates read


class FreshScratch(Scratch):
    """A new tensor for every request: what the pass computed before it reused memory."""

    def tensor(self, name, shape, dtype, device="cpu", capacity=0):
        return torch.full(shape, float("nan"), dtype=dtype, device=device)


def _tables(model, specs, ids) -> dict[str, dict[str, np.ndarray]]:
    tables, _maps = analyze_pass(model, specs, ids, Settings(map_tokens=len(ids) - 1))
    return {f.name: getattr(tables, f.name).arrays() for f in dataclasses.fields(tables)}


@pytest.mark.parametrize("family", ["llama", "gemma2", "gpt_oss", "bloom"])
def test_the_streamed_pass_in_reused_buffers_gives_the_same_numbers(
    tiny_model_dirs, family, monkeypatch
):
    loaded = load_model(str(tiny_model_dirs[family]))
    ids = torch.tensor(loaded.tokenizer(TEXT).input_ids)
    specs = discover(loaded.family, loaded.model)
    monkeypatch.setattr(streaming, "block_rows", lambda heads, keys: 4)  # many blocks
    reused = _tables(loaded.model, specs, ids)
    monkeypatch.setattr("attnreport.capture.Scratch", FreshScratch)
    monkeypatch.setattr("attnreport.sentence_pass.Scratch", FreshScratch)
    monkeypatch.setattr("attnreport.streaming.Scratch", FreshScratch)
    fresh = _tables(loaded.model, specs, ids)
    assert list(reused) == list(fresh)
    for name, table in fresh.items():
        for column, expected in table.items():
            np.testing.assert_array_equal(reused[name][column], expected, f"{name}.{column}")
