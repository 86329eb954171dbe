"""The one convention for the KL divergence an intervention causes, wherever it is printed.

``KL_i = KL(p_base || p_modified)`` of the next-token distribution at position ``i``, in
nats (``next_token.next_token_kl``). An intervention on one sentence moves it by the mean
of ``KL_i`` over that sentence's positions (``sentence_kl``); on several sentences by the
mean of those per-sentence values (``intervention_kl``): each sentence weighs the same,
whatever its length, and the per-sentence values give the spread. Pooling every position
of every sentence instead would let the longest sentence dominate (the comparison did so,
and printed 0.174 nats where the model's page, averaging per sentence, said 0.18).
``KL_NAME`` and ``KL_CONVENTION`` name it in the Methods. Pure and torch-free.
"""

from __future__ import annotations

from collections.abc import Sequence

KL_NAME = "sentence-averaged KL"
KL_CONVENTION = (
    "the mean of KL_i over the positions of each sentence, then the mean of those over the "
    "sentences: each sentence weighs the same, whatever its length"
)


def sentence_kl(kl: Sequence[float]) -> float:
    """Mean of one sentence's per-position KL values, in nats (0 for none)."""
    values = [float(v) for v in kl]
    return sum(values) / len(values) if values else 0.0


def intervention_kl(per_sentence: Sequence[Sequence[float]]) -> float:
    """The sentence-averaged KL: the mean over sentences of ``sentence_kl`` (0 for none)."""
    means = [sentence_kl(kl) for kl in per_sentence]
    return sum(means) / len(means) if means else 0.0
