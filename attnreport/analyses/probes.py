"""The synthetic induction probe and the scores read on it; massive activations per layer.

A probe is ``R`` token ids drawn uniformly (``numpy.random.default_rng(seed)``, without
the tokenizer's special tokens), repeated twice, with the model's BOS first when it adds
one: ``[bos?] t_1 .. t_R t_1 .. t_R``. On the second copy, query i holds the token that
occurred at ``i - R``; an induction head attends to the token just after that earlier
occurrence, key ``i - R + 1``.

Shape letters: ``head``, ``query``, ``key``, ``model``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import torch

from attnreport.analyses.roles import PREVIOUS_FROM
from attnreport.analyses.tables import Table, round_sig

PROBE_LENGTH = 50  # R: random tokens per copy
PROBE_COUNT = 10
PROBE_SEED = 0


def make_probes(
    vocab_size: int,
    special_ids: Iterable[int],
    bos_id: int | None = None,
    count: int = PROBE_COUNT,
    length: int = PROBE_LENGTH,
    seed: int = PROBE_SEED,
) -> list[list[int]]:
    """``count`` probes of ``2 * length`` (+1 with ``bos_id``) token ids; the same for the
    same arguments on any machine. ValueError when fewer than 2 ordinary ids exist."""
    special = {int(i) for i in special_ids}
    pool = np.array([i for i in range(vocab_size) if i not in special], dtype=np.int64)
    if len(pool) < 2:
        raise ValueError("an induction probe needs at least 2 ordinary token ids")
    rng = np.random.default_rng(seed)
    probes = []
    for _ in range(count):
        half = rng.choice(pool, size=length, replace=True).tolist()
        probes.append(([] if bos_id is None else [int(bos_id)]) + half + half)
    return probes


def probe_offset(probe: Sequence[int], length: int = PROBE_LENGTH) -> int:
    """1 when the probe starts with a BOS (its length is odd), else 0."""
    return len(probe) - 2 * length


def induction_scores(probs: torch.Tensor, offset: int, length: int = PROBE_LENGTH) -> np.ndarray:
    """(head,) float64: mean over the second copy's queries ``i`` of ``p[i, i - length + 1]``.

    ``probs`` (head, query, key) of one probe whose copies start at ``offset`` (0, or 1
    after a BOS).
    """
    queries = torch.arange(offset + length, offset + 2 * length)
    return probs[:, queries, queries - length + 1].double().mean(1).numpy()


def previous_token_scores(probs: torch.Tensor) -> np.ndarray:
    """(head,) float64: mean over queries ``i >= 2`` of ``p[i, i - 1]`` (0 below 3 tokens):
    query 1's previous token is the first one, as on the sentences (``roles.PREVIOUS_FROM``)."""
    n = probs.shape[1]
    if n <= PREVIOUS_FROM:
        return np.zeros(probs.shape[0], dtype=np.float64)
    queries = torch.arange(PREVIOUS_FROM, n)
    return probs[:, queries, queries - 1].double().mean(1).numpy()


def probe_table(
    per_probe: Sequence[Sequence[tuple[np.ndarray, np.ndarray]]],
    layers: Sequence[int] | None = None,
) -> Table:
    """The probe scores per (layer, head): ``per_probe[p][i]`` is that probe's
    ``(induction, previous_token)`` arrays (head,) of attention layer ``layers[i]``
    (``i`` itself when None; a hybrid's other layers have no row). Columns: layer, head,
    induction, previous_token_probe, each the mean over probes (all of one length). Layers
    may have different numbers of heads (Inkling's sliding and full layers)."""
    n_layers = len(per_probe[0])
    induction = [np.mean([probe[i][0] for probe in per_probe], axis=0) for i in range(n_layers)]
    previous = [np.mean([probe[i][1] for probe in per_probe], axis=0) for i in range(n_layers)]
    numbers = np.arange(n_layers) if layers is None else np.asarray(layers)
    heads = [len(scores) for scores in induction]
    return {
        "layer": np.repeat(numbers.astype(np.int64), heads),
        "head": np.concatenate([np.arange(n, dtype=np.int64) for n in heads]),
        "induction": np.concatenate(induction),
        "previous_token_probe": np.concatenate(previous),
    }


def massive_activation_row(layer: int, x: torch.Tensor) -> Table:
    """One sentence's ``massive_activations`` row of one layer (Sun et al. 2024).

    ``x`` (query, model): the residual stream entering block ``layer``. Columns: layer,
    position and dimension of the largest ``|x|`` rounded to 6 significant digits (as
    published; ties to the first in row-major order, so a last-bit difference between
    two passes does not move it),
    value (its signed activation), median (the median of ``|x|`` over every position and
    dimension, ``torch.median``'s lower median) and ratio = ``|value| / median`` (0 when
    the median is 0).
    """
    wide = x if x.dtype in (torch.float32, torch.float64) else x.float()  # exact
    magnitude = wide.detach().cpu().abs().reshape(-1).numpy()
    flat = _first_largest_rounded(magnitude)
    position, dimension = divmod(flat, int(x.shape[1]))
    lower = (magnitude.size - 1) // 2  # torch.median's lower median: that order statistic
    median = float(np.partition(magnitude, lower)[lower])
    top = float(magnitude[flat])
    return {
        "layer": np.array([layer], dtype=np.int64),
        "position": np.array([position], dtype=np.int64),
        "dimension": np.array([dimension], dtype=np.int64),
        "value": np.array([float(x[position, dimension])], dtype=np.float64),
        "median": np.array([median], dtype=np.float64),
        "ratio": np.array([top / median if median > 0 else 0.0], dtype=np.float64),
    }


def _first_largest_rounded(magnitude: np.ndarray) -> int:
    """The first index of the largest ``round_sig(magnitude)`` (values >= 0). Rounding is
    monotone, so only values within a rounding step of the largest can round to its
    rounded value: those are rounded, not every value."""
    largest = round_sig(float(magnitude.max()))
    candidates = np.flatnonzero(magnitude >= largest * (1 - 1e-5))  # a step is <= 5e-6 of it
    return int(candidates[int(np.argmax(round_sig(magnitude[candidates])))])
