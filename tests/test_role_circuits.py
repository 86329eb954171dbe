"""Head-role scores on real forward passes.

A 2-layer attention-only transformer with weights set by hand (Elhage et al. 2021, "A
Mathematical Framework for Transformer Circuits"): layer 0 head 0 attends to the
previous token and writes that token into a "previous token" subspace; layer 1 head 0
matches the current token against that subspace, so on a repeated sequence it attends to
the token after the earlier occurrence (an induction head). Layer 0 head 1 attends
uniformly and layer 1 head 1 to the current token. Its attention patterns, from its own
forward pass, go through the analyses' scoring functions; the planted heads must score
above 0.9 on their role and every other head below 0.2.

A tiny model's and the default model's previous-token and entropy scores are recomputed
from transformers' own ``output_attentions`` (eager attention) and must agree within 1e-5.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnreport.analyses.probes import (
    induction_scores,
    make_probes,
    previous_token_scores,
    probe_offset,
    probe_table,
)
from attnreport.analyses.roles import roles_of_probs

VOCAB, LENGTH, BETA = 400, 50, 40.0


class HandBuiltCircuit(torch.nn.Module):
    """Residual stream: [token one-hot (V) | previous-token slot (V) | position one-hot (N)].

    ``forward(ids)`` returns each layer's (head, query, key) attention probabilities.
    """

    def __init__(self, vocab: int = VOCAB, n_ctx: int = 2 * LENGTH + 1, beta: float = BETA):
        super().__init__()
        self.vocab, self.n_ctx = vocab, n_ctx
        d = 2 * vocab + n_ctx
        tok, prev, pos = (
            torch.arange(vocab),
            vocab + torch.arange(vocab),
            2 * vocab + torch.arange(n_ctx),
        )
        eye_pos, zeros = torch.arange(n_ctx), torch.zeros(d, max(vocab, n_ctx))
        # layer 0 head 0: query at i looks for key position i - 1; writes token into prev slot
        q_prev, k_pos = zeros.clone(), zeros.clone()
        q_prev[pos[1:], eye_pos[:-1]] = beta
        k_pos[pos, eye_pos] = 1.0
        ov_prev = torch.zeros(d, d)
        ov_prev[tok, prev] = 1.0
        # layer 1 head 0: query's token against the key's previous-token slot
        q_tok, k_prev = zeros.clone(), zeros.clone()
        q_tok[tok, torch.arange(vocab)] = beta
        k_prev[prev, torch.arange(vocab)] = 1.0
        # layer 1 head 1: the current position
        q_self = zeros.clone()
        q_self[pos, eye_pos] = beta
        self.layers = [
            [(q_prev, k_pos, ov_prev), (zeros, zeros, torch.zeros(d, d))],  # head 1: uniform
            [(q_tok, k_prev, torch.zeros(d, d)), (q_self, k_pos, torch.zeros(d, d))],
        ]

    def embed(self, ids: torch.Tensor) -> torch.Tensor:
        n = len(ids)
        x = torch.zeros(n, 2 * self.vocab + self.n_ctx)
        x[torch.arange(n), ids] = 1.0
        x[torch.arange(n), 2 * self.vocab + torch.arange(n)] = 1.0
        return x

    def forward(self, ids: torch.Tensor) -> list[torch.Tensor]:
        x = self.embed(ids)  # (query, model)
        n = len(ids)
        causal = torch.ones(n, n, dtype=torch.bool).tril()
        patterns = []
        for heads in self.layers:
            probs, update = [], torch.zeros_like(x)
            for w_q, w_k, w_ov in heads:
                scores = (x @ w_q) @ (x @ w_k).T  # (query, key)
                p = torch.softmax(scores.masked_fill(~causal, -torch.inf), dim=-1)
                probs.append(p)
                update = update + p @ (x @ w_ov)
            x = x + update
            patterns.append(torch.stack(probs))  # (head, query, key)
        return patterns


@pytest.mark.parametrize("bos", [None, VOCAB - 1], ids=["no-bos", "bos"])
def test_planted_previous_token_and_induction_heads_are_found_and_no_other(bos):
    model = HandBuiltCircuit()
    special = [] if bos is None else [bos]
    probes = make_probes(VOCAB, special, bos, count=10, length=LENGTH)
    per_probe = []
    for probe in probes:
        patterns = model(torch.tensor(probe))
        offset = probe_offset(probe, LENGTH)
        per_probe.append(
            [(induction_scores(p, offset, LENGTH), previous_token_scores(p)) for p in patterns]
        )
    table = probe_table(per_probe)
    scores = {
        (int(layer), int(head)): (induction, previous)
        for layer, head, induction, previous in zip(
            table["layer"], table["head"], table["induction"], table["previous_token_probe"],
            strict=True,
        )
    }  # fmt: skip
    assert scores[(0, 0)][1] > 0.9  # the previous-token head
    assert scores[(1, 0)][0] > 0.9  # the induction head
    others = [
        value
        for key, (induction, previous) in scores.items()
        for value, planted in ((induction, key == (1, 0)), (previous, key == (0, 0)))
        if not planted
    ]
    assert len(others) == 6 and max(others) < 0.2, scores


def test_the_sentence_scores_read_the_same_forward_pass():
    """On a sentence, ``roles_of_probs`` finds the same previous-token head, and the
    induction head attends to the earlier copies' successors, not to the copies."""
    model = HandBuiltCircuit()
    ids = torch.tensor([1, 5, 9, 7, 5, 9, 7, 5, 9])  # token 0 sees only itself: unique
    patterns = model(ids)
    n = len(ids)
    allowed = torch.ones(n, n, dtype=torch.bool).tril()
    norms = torch.ones(2, n, dtype=torch.float64)
    layer0 = roles_of_probs(0, patterns[0], allowed, ids, norms)
    layer1 = roles_of_probs(1, patterns[1], allowed, ids, norms)
    assert layer0["previous_token"][0] > 0.99 and layer0["previous_token"][1] < 0.5
    assert layer1["duplicate_token"][0] < 0.01  # it reads the token after each copy
    assert layer1["entropy_normalised"][1] < 0.01  # the current-token head is one-hot


def assert_roles_match_output_attentions(session, count: int) -> None:
    """The previous-token (queries i >= 2: query 1's previous token is the first) and
    entropy scores of the first ``count`` sentences equal those recomputed from
    transformers' own ``output_attentions`` (eager attention) within 1e-5."""
    from attnreport.config import Settings
    from attnreport.sentence_pass import analyze_pass

    for sentence in session.sentences[:count]:
        ids = torch.tensor(sentence.token_ids)
        tables, _ = analyze_pass(session.model, session.specs, ids, Settings())
        with torch.no_grad():
            out = session.model(input_ids=ids[None], output_attentions=True, use_cache=False)
        expected_prev, expected_entropy = [], []
        for attention in out.attentions:
            p = attention[0].double()  # (head, query, key), the model's own eager weights
            queries = torch.arange(2, len(ids))
            expected_prev.append(p[:, queries, queries - 1].mean(1))
            entropy = -torch.special.xlogy(p, p).sum(-1)  # (head, query)
            expected_entropy.append(entropy[:, 1:].mean(1))
        roles = tables.head_roles.arrays()
        np.testing.assert_allclose(
            roles["previous_token"], torch.cat(expected_prev).numpy(), rtol=0, atol=1e-5
        )
        np.testing.assert_allclose(
            roles["entropy"], torch.cat(expected_entropy).numpy(), rtol=0, atol=1e-5
        )
        assert set(roles["n_previous"].tolist()) == {len(ids) - 2}


def test_previous_token_and_entropy_match_a_tiny_models_output_attentions(
    tiny_model_dirs, tmp_path
):
    from attnreport.session import open_session

    sentences = tmp_path / "s.txt"
    sentences.write_text("the cat sat on the mat and the cat slept\nhello world again\n")
    assert_roles_match_output_attentions(
        open_session(str(tiny_model_dirs["llama"]), str(sentences)), 2
    )


@pytest.mark.slow
@pytest.mark.default_model
def test_previous_token_and_entropy_match_transformers_output_attentions():
    from attnreport.session import open_session

    assert_roles_match_output_attentions(open_session("default", None), 3)


@pytest.mark.parametrize("family", ["llama", "mistral", "gpt_oss", "bloom"])
def test_batched_probe_scores_equal_our_captured_attention(tiny_model_dirs, family):
    """The probes run as one batch through the model's eager attention; each probe's
    scores equal those read from our own capture of that probe (sliding windows, sinks,
    ALiBi included)."""
    from attnreport.capture import capture_attention
    from attnreport.models import load_model
    from attnreport.models.layout import discover
    from attnreport.probe_pass import probe_scores

    loaded = load_model(str(tiny_model_dirs[family]))
    specs = discover(loaded.family, loaded.model)
    probes = make_probes(len(loaded.tokenizer), loaded.tokenizer.all_special_ids, count=3)
    batched = probe_scores(loaded.model, probes)
    per_probe = []
    for probe in probes:
        capture = capture_attention(loaded.model, specs, torch.tensor(probe))
        per_probe.append(
            [
                (induction_scores(r.probs, 0), previous_token_scores(r.probs))
                for r in capture.records()
            ]
        )
    ours = probe_table(per_probe)
    for column in ("induction", "previous_token_probe"):
        np.testing.assert_allclose(batched[column], ours[column], rtol=0, atol=1e-6)
