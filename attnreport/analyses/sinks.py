"""The literature's attention-sink metric beside our argmax-based first-token focus.

Gu et al., "When Attention Sink Emerges in Language Models: An Empirical View" (ICLR
2025) score each head by the mean attention probability the first token receives,
``score = mean_i p_i0`` over the queries that can see token 0, and count the head as a
sink when ``score > eps`` (``eps = 0.3``). Their ``Sink_1^eps`` is the percentage of sink
heads, per layer and over the whole model. We average over queries ``i >= 1`` like every
other query statistic of the report (row 0 has a single key, so ``p_00 = 1`` always); the
paper's average also counts that row, which adds at most ``1/n`` to a head's score.

Our own first-token focus is argmax-based: the share of queries whose *top key* is token
0. We call a head a *sink by argmax* when ``first_focus > ARGMAX_SINK`` (0.5): the first
token is the top key for more than half of its queries, the same "most queries" the
report uses everywhere (``is_argmax_sink`` is the one comparison, ``ARGMAX_WORDS`` the
words every legend, note and count uses). The two disagree in two ways, both informative: a head can give token 0
a large mean share while another key wins most rows (diffuse rows, or a sink that fires
on some queries only), and token 0 can win most rows by a narrow margin with a small
probability (flat rows, where the argmax carries little mass).

Everything here is pure: tensors or column tables (``{name: list or array}``) in, new
values out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from attnreport.analyses.weights import query_weights
from attnreport.vocabulary import MOST

if TYPE_CHECKING:  # the tensor functions import torch when called: findings and pages
    import torch  # read only the table functions, and ``render`` never imports torch

EPS = 0.3  # Gu et al.'s threshold on the mean first-token probability
GU_TOKENS = 64  # the length of the inputs Gu et al. measure their sink rate on
ARGMAX_SINK = MOST  # first_focus above which a head is a sink by argmax: "most queries"
ARGMAX_WORDS = "the first token is its top key for more than half of its queries"

Columns = Mapping[str, Sequence[Any] | np.ndarray]


def first_token_scores(probs: torch.Tensor, allowed: torch.Tensor | None = None) -> torch.Tensor:
    """Gu et al.'s per-head first-token score: mean of ``p_i0`` over queries that see token 0.

    probs: (head, query, key) attention probabilities of one layer (rows of real tokens;
    with learned sink logits they sum to less than 1). allowed: bool, (query, key) or
    (head, query, key), True where the mask lets query ``i`` attend to key ``j``; default
    causal. Counted queries: ``i >= 1`` with ``allowed[i, 0]`` (a sliding window can hide
    token 0 from late queries). Returns (head,) float64; 0.0 for a head with no such query
    (a one-token sentence). The input is not changed.
    """
    import torch

    if probs.dim() != 3 or probs.shape[1] != probs.shape[2]:
        raise ValueError(
            f"probs must be (head, query, key) with query == key, not {tuple(probs.shape)}"
        )
    n_heads, n = probs.shape[0], probs.shape[1]
    if allowed is None:
        allowed = torch.ones(n, n, dtype=torch.bool).tril()
    sees_first = allowed[..., 1:, 0].expand(n_heads, n - 1)  # (head, query-1)
    p_first = probs[:, 1:, 0].double()  # (head, query-1)
    counted = sees_first.double().sum(1)
    total = torch.where(sees_first, p_first, torch.zeros_like(p_first)).sum(1)
    return torch.where(counted > 0, total / counted.clamp(min=1), torch.zeros_like(total))


def first_token_counts(allowed: torch.Tensor, n_heads: int) -> torch.Tensor:
    """(head,) number of queries ``i >= 1`` that can see token 0: the weight of each score."""
    return allowed[..., 1:, 0].expand(n_heads, allowed.shape[-2] - 1).sum(1)


def scores_from_triangles(probs: Sequence[Sequence[Sequence[float | None]]]) -> list[float]:
    """The same score from a results file's triangles: ``probs[head][i][j]`` (``None`` where
    the mask blocks the key). Returns one float per head (0.0 when no query sees token 0).
    """
    out = []
    for tri in probs:
        seen = [float(row[0]) for row in tri[1:] if row[0] is not None]
        out.append(sum(seen) / len(seen) if seen else 0.0)
    return out


def pooled_scores(by_sentence: Columns, score: str = "first_prob") -> dict[tuple[int, int], float]:
    """Per (layer, head), the set-wide score: per-sentence scores weighted by the queries
    each averaged over (``n_first`` for ``first_prob``: ``analyses.focus.query_weights``).

    by_sentence: columns layer, head, ``score``, n_queries (and n_first) (e.g.
    ``focus_by_sentence``). Sentences with no query carry no weight; a head with no weight
    at all scores 0.0.
    """
    num: dict[tuple[int, int], float] = {}
    den: dict[tuple[int, int], float] = {}
    weights = query_weights({k: np.asarray(v) for k, v in by_sentence.items()}, score)
    for layer, head, value, n in zip(
        by_sentence["layer"], by_sentence["head"], by_sentence[score], weights, strict=True
    ):
        key = (int(layer), int(head))
        num[key] = num.get(key, 0.0) + float(value) * float(n)
        den[key] = den.get(key, 0.0) + float(n)
    return {k: num[k] / den[k] if den[k] > 0 else 0.0 for k in sorted(num)}


@dataclass(frozen=True)
class RateBasis:
    """What a set-wide sink rate rests on: ``sentences`` of ``shortest``-``longest``
    tokens (``short`` of them under ``GU_TOKENS``), ``queries`` query tokens and ``heads``."""

    sentences: int
    shortest: int
    longest: int
    short: int
    queries: int
    heads: int


def rate_basis(by_sentence: Columns) -> RateBasis:
    """The basis of the rates pooled from ``by_sentence`` (columns sentence, layer, head,
    n_queries, e.g. ``focus_by_sentence``): a sentence of n tokens has n - 1 queries."""
    sentence = np.asarray(by_sentence["sentence"])
    n_queries = np.asarray(by_sentence["n_queries"])
    first = np.unique(sentence, return_index=True)[1]
    tokens = n_queries[first].astype(np.int64) + 1
    heads = {
        (int(la), int(h)) for la, h in zip(by_sentence["layer"], by_sentence["head"], strict=True)
    }
    return RateBasis(
        sentences=len(tokens),
        shortest=int(tokens.min()) if len(tokens) else 0,
        longest=int(tokens.max()) if len(tokens) else 0,
        short=int((tokens < GU_TOKENS).sum()),
        queries=int((tokens - 1).sum()),
        heads=len(heads),
    )


@dataclass(frozen=True)
class SinkRates:
    """Gu et al.'s Sink_1^eps: percentages (0-100) of heads whose score exceeds ``eps``."""

    eps: float
    by_layer: dict[int, float]  # layer -> percentage of that layer's heads
    overall: float  # percentage of all heads
    sinks: tuple[tuple[int, int], ...]  # (layer, head) of every sink head, sorted
    n_heads: int


def sink_rates(scores: Mapping[tuple[int, int], float], eps: float = EPS) -> SinkRates:
    """Sink_1^eps per layer and overall from per-head scores ``{(layer, head): score}``.

    A head is a sink when its score is strictly greater than ``eps``. With the same number
    of heads in every layer, ``overall`` is the mean of ``by_layer``.
    """
    if not scores:
        raise ValueError("no head scores to rate")
    per_layer: dict[int, list[bool]] = {}
    for (layer, _), value in sorted(scores.items()):
        per_layer.setdefault(layer, []).append(float(value) > eps)
    sinks = tuple(k for k, v in sorted(scores.items()) if float(v) > eps)
    return SinkRates(
        eps=eps,
        by_layer={k: 100.0 * sum(v) / len(v) for k, v in per_layer.items()},
        overall=100.0 * len(sinks) / len(scores),
        sinks=sinks,
        n_heads=len(scores),
    )


def head_values(table: Columns, column: str) -> dict[tuple[int, int], float]:
    """``{(layer, head): value}`` of one column of a per-head table (one row per head)."""
    pairs = zip(table["layer"], table["head"], table[column], strict=True)
    return {(int(a), int(b)): float(v) for a, b, v in pairs}


@dataclass(frozen=True)
class Disagreement:
    """Heads that are sinks by one measure and not by the other (each sorted)."""

    by_probability_only: tuple[tuple[int, int], ...]  # score > eps, first_focus < threshold
    by_argmax_only: tuple[tuple[int, int], ...]  # first_focus >= threshold, score <= eps
    both: tuple[tuple[int, int], ...]
    neither: int  # how many heads are sinks by neither measure


def is_argmax_sink(first_focus: float) -> bool:
    """Whether a head with this first-token focus is a sink by argmax (``ARGMAX_WORDS``):
    the one comparison behind every count, legend and claim."""
    return float(first_focus) > ARGMAX_SINK


def compare_sinks(
    scores: Mapping[tuple[int, int], float],
    first_focus: Mapping[tuple[int, int], float],
    eps: float = EPS,
) -> Disagreement:
    """Where Gu et al.'s probability-based sinks and our argmax-based ones disagree.

    Both mappings are ``{(layer, head): value}`` over the same heads (e.g. the pooled
    ``first_prob`` and ``first_focus`` of the set, or one sentence's focus table).
    """
    if set(scores) != set(first_focus):
        raise ValueError("scores and first_focus must cover the same heads")
    prob = {k for k, v in scores.items() if float(v) > eps}
    arg = {k for k, v in first_focus.items() if is_argmax_sink(v)}
    return Disagreement(
        by_probability_only=tuple(sorted(prob - arg)),
        by_argmax_only=tuple(sorted(arg - prob)),
        both=tuple(sorted(prob & arg)),
        neither=len(set(scores) - prob - arg),
    )
