"""The streamed sentence pass and the long-input interventions against the dense ones.

A sentence longer than ``map_tokens`` runs through the blockwise attention and the
blockwise analyses; the same sentence with ``map_tokens`` above its length runs through
the dense capture. Their tables must agree on tiny models of the families with sliding
windows, learned sinks, soft-caps, ALiBi, biases and QK-norm, with the model's own
attention split into several query blocks. Memory is checked by what is alive: while a
layer is analysed, no earlier layer's (head, query, key) tensors may still exist.
"""

from __future__ import annotations

import dataclasses
import gc

import numpy as np
import pytest
import torch

from attnreport import streaming
from attnreport.config import Settings
from attnreport.interventions import identity, mean_grid, run_modified, scale, scaling_grid
from attnreport.models import load_model
from attnreport.models.layout import discover
from attnreport.sentence_pass import analyze_pass

TEXT = "the cat chased the mouse and the dog sat on the mat and the cat sat on the dog"
FAMILIES = ("llama", "mistral", "gemma2", "gemma3", "qwen2", "gpt_oss", "bloom", "gpt2")


def tiny(tiny_model_dirs, family):
    loaded = load_model(str(tiny_model_dirs[family]))
    ids = torch.tensor(loaded.tokenizer(TEXT).input_ids)
    return loaded.model, discover(loaded.family, loaded.model), ids


@pytest.fixture
def small_blocks(monkeypatch):
    """The model's attention in blocks of 4 queries, so a pass spans several blocks."""
    monkeypatch.setattr(streaming, "block_rows", lambda heads, keys: 4)


@pytest.mark.parametrize("family", FAMILIES)
def test_streamed_tables_equal_the_dense_tables(tiny_model_dirs, family, small_blocks):
    model, specs, ids = tiny(tiny_model_dirs, family)
    dense_tables, maps = analyze_pass(model, specs, ids, Settings(map_tokens=len(ids)))
    streamed_tables, no_maps = analyze_pass(model, specs, ids, Settings(map_tokens=len(ids) - 1))
    assert maps is not None and len(maps.scores) == len(specs) and no_maps is None
    dense, streamed = (
        {f.name: getattr(t, f.name).arrays() for f in dataclasses.fields(t)}
        for t in (dense_tables, streamed_tables)
    )
    for name, table in dense.items():
        assert list(streamed[name]) == list(table), name
        for column, expected in table.items():
            got = streamed[name][column]
            if expected.dtype.kind == "f":
                np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5, err_msg=column)
            else:
                np.testing.assert_array_equal(got, expected, err_msg=f"{name}.{column}")


def big_storages(n_heads: int, n: int) -> set[int]:
    """Storages of live (..., query, key) tensors holding at least one float32 n x n matrix per
    head: a layer's logits, scores, probabilities or score terms (not the shared mask)."""
    limit = n_heads * n * n * 4
    found = set()
    for obj in gc.get_objects():
        if type(obj) is not torch.Tensor or obj.dim() < 2 or tuple(obj.shape[-2:]) != (n, n):
            continue
        if obj.untyped_storage().nbytes() >= limit:
            found.add(obj.untyped_storage().data_ptr())
    return found


def storages(*tensors) -> set[int]:
    return {t.untyped_storage().data_ptr() for t in tensors if t is not None}


@pytest.mark.parametrize("blockwise", [False, True], ids=["dense", "blockwise"])
def test_only_the_current_layers_n_by_n_tensors_are_alive(tiny_model_dirs, blockwise):
    model, specs, ids = tiny(tiny_model_dirs, "llama")
    n, n_heads = len(ids), specs[0].layout.n_heads
    seen = []

    def on_layer(spec, raw):
        computed = raw.computed
        own = set() if blockwise else storages(computed.logits, computed.scores, computed.probs)
        alive = big_storages(n_heads, n)
        assert alive <= own, f"layer {spec.layer}: {len(alive - own)} n x n tensors of others"
        seen.append((spec.layer, len(alive)))

    streaming.stream_layers(model, specs, ids, on_layer, blockwise)
    assert [layer for layer, _ in seen] == [s.layer for s in specs]
    if not blockwise:  # the check can see the dense layer's own tensors: it is not vacuous
        assert all(count >= 2 for _, count in seen)
    assert big_storages(n_heads, n) == set()  # nothing is left after the pass


@pytest.mark.parametrize("family", ["llama", "gemma2", "gpt_oss", "bloom"])
def test_long_input_interventions_equal_the_dense_ones(tiny_model_dirs, family, small_blocks):
    model, specs, ids = tiny(tiny_model_dirs, family)
    m, last = 6, len(specs) - 1
    observe = tuple(sorted({1, last}))
    for modify in (identity, scale("K", 1e-3), scale("V", 0.5)):
        dense = run_modified(model, specs, ids, 1, modify, observe)
        long = run_modified(model, specs, ids, 1, modify, observe, leading=m)
        assert long.log_probs is None and long.hidden is not None
        for layer in observe:
            assert long.probs[layer].shape == (dense.probs[layer].shape[0], m, m)
            torch.testing.assert_close(
                long.probs[layer], dense.probs[layer][:, :m, :m], atol=1e-5, rtol=1e-4
            )
    base, cells = scaling_grid(model, specs, ids, 1, (0.5, 1e-3))
    long_base, long_cells = scaling_grid(model, specs, ids, 1, (0.5, 1e-3), leading=m)
    for cell, long_cell in zip(cells, long_cells, strict=True):
        torch.testing.assert_close(long_cell.kl, cell.kl, atol=1e-5, rtol=1e-3)
        assert long_cell.outcome.log_probs is None and long_cell.outcome.hidden is None
    assert base.log_probs is None and long_base.hidden is None  # grids keep only what they report
    _, mean_cells = mean_grid(model, specs, {0: ids}, last)
    _, long_mean = mean_grid(model, specs, {0: ids}, last, leading=m)
    for cell, long_cell in zip(mean_cells, long_mean, strict=True):
        torch.testing.assert_close(long_cell.kl, cell.kl, atol=1e-5, rtol=1e-3)


def test_replaying_a_longer_prefix_gives_the_same_numbers(tiny_model_dirs):
    model, specs, ids = tiny(tiny_model_dirs, "llama")
    layer = len(specs) - 1
    base = run_modified(model, specs, ids, layer, identity, (layer,))
    assert len(base.prefix) == 1  # only the output the intervention layer reads is kept
    full = run_modified(model, specs, ids, layer, scale("Q", 1e-3), (layer,))
    replayed = run_modified(model, specs, ids, layer, scale("Q", 1e-3), (layer,), base.prefix)
    assert torch.equal(full.probs[layer], replayed.probs[layer])
    assert torch.equal(full.log_probs, replayed.log_probs)


def test_streamed_json_is_byte_identical_to_the_committed_sentences():
    """The committed example's sentences (with maps, every table), streamed in the current
    schema, give ``dump_json``'s bytes; and the committed files' JSON (gunzipped: another
    zlib may compress it to other bytes) once they are in the current schema (an older
    committed example is rewritten by the next ``make site``)."""
    import json
    from pathlib import Path

    from attnreport.results import SCHEMA, load
    from attnreport.results.io import dump_json, dump_json_streamed, layout_of
    from attnreport.results.layout import decode
    from attnreport.results.types import sentence_to_json

    folder = Path(__file__).parents[1] / "site" / "smollm2-135m-instruct" / "results"
    manifest = json.loads((folder / "manifest.json").read_text())
    current, layout = manifest["schema"] == SCHEMA, layout_of(manifest)
    for sentence in load(folder).sentences:
        streamed = dump_json_streamed(sentence_to_json(sentence, lazy=True))
        assert bytes(streamed) == dump_json(sentence_to_json(sentence))
        name = layout.sentence(sentence.index)
        committed = decode((folder / name).read_bytes(), name, name)
        assert bytes(streamed) == committed or not current


def test_a_head_that_cannot_be_reproduced_is_refused(tiny_model_dirs, monkeypatch):
    from attnreport.errors import AttnReportError

    model, specs, ids = tiny(tiny_model_dirs, "llama")
    # Llama ignores a final soft-cap, so the blockwise head (which applies it) disagrees.
    monkeypatch.setattr(model.config, "final_logit_softcapping", 0.01, raising=False)
    with pytest.raises(AttnReportError, match="final logits"):
        run_modified(model, specs, ids, 1, identity, (1,), leading=4)


@pytest.mark.parametrize("model_type", ["afmoe", "qwen3_next", "bitnet", "jetmoe", "diffllama"])
def test_a_gated_output_streams_to_the_dense_tables(model_type, small_blocks):
    """Behind an output gate a head's update is W_O,h (g_h * z_h): the blockwise analyses
    read the model's own gated output (captured whole, O(n x d)), so a long input of a gated
    model (AFMoE, Qwen3-Next, BitNet's normed gate, JetMoE's experts, DiffLlama) gives the
    tables the dense pass gives."""
    from attnreport.models.families import family_for
    from attnreport.verification import verified_layers
    from tests.zoo_models import build_zoo_model

    model, why = build_zoo_model(model_type)
    assert model is not None, why
    specs = verified_layers(family_for(model_type), model)
    assert any(s.gated for s in specs)
    ids = torch.arange(3, 15)
    dense_tables, _ = analyze_pass(model, specs, ids, Settings(map_tokens=len(ids)))
    streamed_tables, no_maps = analyze_pass(model, specs, ids, Settings(map_tokens=len(ids) - 1))
    assert no_maps is None  # the streamed (blockwise) pass
    for field in dataclasses.fields(dense_tables):
        dense = getattr(dense_tables, field.name).arrays()
        streamed = getattr(streamed_tables, field.name).arrays()
        for column, expected in dense.items():
            if expected.dtype.kind == "f":
                np.testing.assert_allclose(streamed[column], expected, rtol=1e-4, atol=1e-5,
                                           err_msg=f"{field.name}.{column}")  # fmt: skip
            else:
                np.testing.assert_array_equal(streamed[column], expected, err_msg=column)
