"""Blockwise analyses against a dense computation of the same layer.

The reference below builds the whole (head, query, key) scores, probabilities and score
terms the straightforward way, wraps them in a ``LayerRecord`` and runs the dense
analyses (``analyze_layer``) on it; the blockwise tables must match them for every option
(grouped-query heads, sliding windows, soft-capping, sink logits, ALiBi, block sizes).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnreport.analyses import analyze_layer, merge_layers
from attnreport.analyses.blockwise import analyze_layer_blockwise
from attnreport.analyses.heads import LayerTensors, block_rows, query_blocks
from attnreport.capture import capture_attention
from attnreport.models import load_model
from attnreport.models.layout import discover
from attnreport.records import LayerRecord

D, MODEL = 8, 12


def rotate(t: torch.Tensor) -> torch.Tensor:
    """A RoPE-like rotation of (head, n, d) by angle position * theta per pair of dims."""
    n, half = t.shape[1], t.shape[2] // 2
    angle = torch.arange(n)[:, None] * (10.0 ** -torch.arange(half) / 1.0)  # (n, half)
    cos, sin = torch.cos(angle), torch.sin(angle)
    a, b = t[..., :half], t[..., half:]
    return torch.cat([a * cos - b * sin, a * sin + b * cos], dim=-1)


def make_tensors(
    n: int = 13, heads: int = 4, kv: int = 4, seed: int = 0, **options
) -> LayerTensors:
    gen = torch.Generator().manual_seed(seed)

    def randn(*shape, scale=1.0):
        return torch.randn(*shape, generator=gen) * scale

    rope = options.pop("rope", options.get("alibi_slopes") is None)
    q_raw, k_raw = randn(heads, n, D, scale=1.5), randn(kv, n, D, scale=1.5)
    out_weight = randn(heads, D, MODEL, scale=0.3)
    out_bias = randn(MODEL, scale=0.1)
    return LayerTensors(
        layer=2,
        x=randn(n, MODEL),
        q_raw=q_raw,
        k_raw=k_raw,
        q=rotate(q_raw) if rope else q_raw,
        k=rotate(k_raw) if rope else k_raw,
        v=randn(kv, n, D),
        q_bias=randn(heads, D, scale=0.5),
        k_bias=randn(kv, D, scale=0.5),
        out_weight=out_weight,
        out_bias=out_bias,
        block_out=randn(n, MODEL),
        scaling=D**-0.5,
        **options,
    )


def dense_reference(t: LayerTensors) -> tuple[LayerRecord, torch.Tensor, torch.Tensor]:
    """(record, raw scores (head, query, key), sink probability (head, query)), all dense."""
    g, n, c = t.groups, t.n_tokens, t.scaling
    k, k_raw, v = (x.repeat_interleave(g, 0) for x in (t.k, t.k_raw, t.v))
    query, key = torch.arange(n)[:, None], torch.arange(n)[None, :]
    allowed = key <= query
    if t.window is not None:
        allowed &= key > query - t.window
    alibi = 0.0 if t.alibi_slopes is None else t.alibi_slopes[:, None, None] * key.float()
    raw = t.q @ k.transpose(1, 2) * c + alibi
    capped = raw if t.softcap is None else t.softcap * torch.tanh(raw / t.softcap)
    scores = capped.masked_fill(~allowed, -torch.inf)
    sink = torch.zeros(t.n_heads, n)
    if t.sinks is None:
        probs = torch.softmax(scores, -1)
    else:
        column = t.sinks[:, None, None].expand(-1, n, 1)
        both = torch.softmax(torch.cat([scores, column], -1), -1)
        probs, sink = both[..., :-1], both[..., -1]
    bq, bk = t.q_bias[:, None, :], t.k_bias.repeat_interleave(g, 0)[:, None, :]
    q_lin, k_lin = t.q_raw - bq, k_raw - bk
    terms = {
        "position": torch.where(allowed, raw - t.q_raw @ k_raw.transpose(1, 2) * c, 0.0),
        "bias": (bq @ k_lin.transpose(1, 2) * c).expand(-1, n, -1),
        "content": q_lin @ k_lin.transpose(1, 2) * c,
        "query_only": ((q_lin * bk).sum(-1, keepdim=True) + (bq * bk).sum(-1)[..., None])
        .mul(c)
        .expand(-1, -1, n),
    }
    record = LayerRecord(
        layer=t.layer,
        x=t.x,
        a=t.x,
        q_raw=t.q_raw,
        k_raw=t.k_raw,
        q=t.q,
        k=t.k,
        v=t.v,
        logits=raw,
        scores=scores,
        probs=probs,
        allowed=allowed,
        context=probs @ v,
        heads_in=probs @ v,
        out_weight=t.out_weight,
        out_bias=t.out_bias,
        block_out=t.block_out,
        terms=terms,
        scaling=c,
        softcap=t.softcap,
        sliding_window=t.window,
        sink_probs=None if t.sinks is None else sink,
    )
    return record, raw, sink


def assert_tables_match(blockwise, dense, raw, sink, t: LayerTensors | None) -> None:
    """Every dense column equals the blockwise one; with ``t``, also first_prob and sink_share."""
    for name, table in dense.items():
        got = blockwise[name]
        for column, expected in table.items():
            if name == "breakdown" and column == "score" and t and t.softcap is not None:
                # The breakdown's score is the raw score its terms sum to, not the capped one.
                h, q, k = (table[c] for c in ("head", "query", "key"))
                expected = raw[h, q, k].double().numpy()
            if np.asarray(expected).dtype.kind == "f":
                np.testing.assert_allclose(got[column], expected, rtol=1e-5, atol=2e-6)
            else:
                np.testing.assert_array_equal(got[column], expected, err_msg=f"{name}.{column}")
    if t is None:
        return
    record = dense_reference(t)[0]
    sees_first = record.allowed[1:, 0]
    seen = record.probs[:, 1:, 0][:, sees_first].double()
    first_prob = seen.mean(1) if seen.shape[1] else torch.zeros(t.n_heads)  # 0: nobody sees it
    np.testing.assert_allclose(blockwise["focus"]["first_prob"], first_prob, rtol=1e-5)
    np.testing.assert_allclose(blockwise["focus"]["sink_share"], sink[:, 1:].mean(1), rtol=1e-5)


CASES = {
    "plain": dict(rows=5),
    "grouped-query": dict(heads=6, kv=2, rows=4),
    "window": dict(window=4, rows=3),
    "window-1": dict(window=1, rows=4),
    "softcap": dict(softcap=1.5, rows=6),
    "sinks": dict(sinks=torch.tensor([0.0, 2.0, -1.0, 4.0]), rows=5),
    "alibi": dict(alibi_slopes=torch.tensor([0.5, 0.25, 0.125, 0.0625]), rows=5),
    "block-1": dict(rows=1, heads=6, kv=3),
    "one-block": dict(rows=64),
    "everything": dict(
        heads=4, kv=2, window=5, softcap=2.0, sinks=torch.tensor([1.0, 0.0, 3.0, -2.0]), rows=4
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_blockwise_tables_equal_dense_tables(case):
    options = dict(CASES[case])
    rows = options.pop("rows")
    t = make_tensors(seed=len(case), **options)
    record, raw, sink = dense_reference(t)
    dense = analyze_layer(record, ranks=3)
    blockwise = analyze_layer_blockwise(t, ranks=3, rows=rows)
    assert list(blockwise) == list(dense)
    for name, table in dense.items():  # the dense columns, in their order
        assert list(blockwise[name]) == list(table)
    assert_tables_match(blockwise, dense, raw, sink, t)


def test_breakdown_terms_sum_to_the_raw_score_and_vanish_without_rotation():
    t = make_tensors(rope=False, softcap=3.0)
    breakdown = analyze_layer_blockwise(t, rows=4)["breakdown"]
    total = sum(breakdown[n] for n in ("position", "bias", "content", "query_only"))
    np.testing.assert_allclose(total, breakdown["score"], rtol=1e-5, atol=1e-5)
    assert (breakdown["position"] == 0).all()  # no rotation, no ALiBi: exactly no position term


def test_ties_go_to_the_lower_key_index():
    # q = 0 makes every score 0: the top key is the first allowed key, then the next ones.
    t = make_tensors(n=9, window=3)
    t = LayerTensors(**{**t.__dict__, "q": torch.zeros_like(t.q)})
    tables = analyze_layer_blockwise(t, rows=2)
    first_allowed = np.maximum(0, np.arange(9) - 2)
    np.testing.assert_array_equal(tables["top"]["top_key"][:9], first_allowed)
    rank1 = tables["breakdown"]["rank"] == 1
    np.testing.assert_array_equal(tables["breakdown"]["key"][rank1][:8], first_allowed[1:] + 1)
    dense = analyze_layer(dense_reference(t)[0])
    np.testing.assert_array_equal(tables["top"]["top_key"], dense["top"]["top_key"])


def test_one_token_sentence_has_zero_statistics():
    t = make_tensors(n=1, sinks=torch.tensor([1.0, 1.0, 1.0, 1.0]))
    tables = analyze_layer_blockwise(t)
    assert tables["focus"]["n_queries"].tolist() == [0] * 4
    assert tables["focus"]["sink_share"].tolist() == [0.0] * 4
    assert tables["top"]["p_top2"].tolist() == [0.0] * 4
    assert len(tables["breakdown"]["rank"]) == 4  # rank 0 only, once per head


def test_block_size_follows_the_budget_and_blocks_cover_every_query():
    # 8 live float32 tensors of (9 heads x rows x 8192 keys) within 256 MiB.
    assert block_rows(9, 8192, 256 * 2**20) == 256 * 2**20 // (8 * 9 * 8192 * 4)
    assert block_rows(9, 2048, 256 * 2**20) == 256  # an eighth of the keys: the causal cap
    assert block_rows(9, 100, 256 * 2**20) == 128
    assert block_rows(9, 8192, 1) == 1
    t = make_tensors(n=13, window=4)
    blocks = list(query_blocks(t, 5))
    assert [(b.start, b.stop, b.first) for b in blocks] == [(0, 5, 0), (5, 10, 2), (10, 13, 7)]
    budgeted = analyze_layer_blockwise(t, budget_bytes=8 * 4 * 13 * 4 * 3)  # 3 rows per block
    np.testing.assert_array_equal(
        budgeted["top"]["top_key"], analyze_layer_blockwise(t, rows=13)["top"]["top_key"]
    )


def test_blockwise_layers_merge_like_dense_layers():
    layers = [analyze_layer_blockwise(make_tensors(seed=s)) for s in range(2)]
    merged = merge_layers(layers)
    assert len(merged["focus_sorted"]["value"]) == 3 * 2 * 4


def test_bad_inputs_are_refused():
    with pytest.raises(ValueError, match="kv heads"):
        make_tensors(heads=4, kv=3)
    with pytest.raises(ValueError, match="window"):
        make_tensors(window=0)
    with pytest.raises(ValueError, match="ranks"):
        analyze_layer_blockwise(make_tensors(), ranks=-1)


def captured_tensors(spec, record) -> LayerTensors:
    """``LayerTensors`` from the capture of a real model (the attention-interface capture)."""
    n_heads, d = record.q.shape[0], record.q.shape[-1]
    zeros = torch.zeros(n_heads, d), torch.zeros(record.k.shape[0], d)
    # BLOOM's ALiBi bias is slope * key position: key 1 of any row holds the slope
    alibi = record.terms["position"][:, -1, 1] if "alibi" in spec.features else None
    sinks = spec.attention.sinks.detach().float() if "sinks" in spec.features else None
    return LayerTensors(
        layer=spec.layer,
        x=record.x,
        q_raw=record.q_raw,
        k_raw=record.k_raw,
        q=record.q,
        k=record.k,
        v=record.v,
        q_bias=zeros[0] if spec.q_bias is None else spec.q_bias,
        k_bias=zeros[1] if spec.k_bias is None else spec.k_bias,
        out_weight=spec.out_weight,
        out_bias=spec.out_bias,
        block_out=record.block_out,
        scaling=record.scaling,
        softcap=record.softcap,
        window=record.sliding_window,
        alibi_slopes=alibi,
        sinks=sinks,
        out_scale=record.out_scale,
    )


def test_blockwise_tables_equal_dense_tables_on_every_tiny_family(tiny_model_dir):
    loaded = load_model(str(tiny_model_dir))
    specs = discover(loaded.family, loaded.model)
    text = "the cat chased the mouse and the dog sat on the mat and the cat sat"
    capture = capture_attention(loaded.model, specs, torch.tensor(loaded.tokenizer(text).input_ids))
    for spec in specs:
        record = capture.record(spec.layer)
        dense = analyze_layer(record)
        blockwise = analyze_layer_blockwise(captured_tensors(spec, record), rows=3)
        assert_tables_match(blockwise, dense, record.scores, torch.zeros(1, 1), None)


def test_bfloat16_scores_are_the_models_own_and_the_rest_is_float32():
    # The model's eager code scores in its dtype; ranks, ties and probabilities follow that
    # score, then everything is float32 (a float32 score would split the model's own ties).
    t32 = make_tensors(n=40, heads=6, kv=2, seed=3)
    low = {name: getattr(t32, name).to(torch.bfloat16) for name in ("q_raw", "k_raw", "q", "k")}
    t = LayerTensors(**{**t32.__dict__, **low})
    raw = (t.q @ t.k.repeat_interleave(3, 0).transpose(1, 2) * t.scaling).float()
    allowed = torch.ones(40, 40, dtype=torch.bool).tril()
    probs = torch.softmax(raw.masked_fill(~allowed, -torch.inf), -1)
    top = analyze_layer_blockwise(t, rows=7)["top"]
    expected = torch.argmax(raw.masked_fill(~allowed, -torch.inf), -1)  # first maximum
    np.testing.assert_array_equal(top["top_key"], expected.reshape(-1).numpy())
    p_top1 = probs.gather(-1, expected[..., None])[..., 0].reshape(-1).double().numpy()
    np.testing.assert_allclose(top["p_top1"], p_top1, rtol=1e-6)
