"""Every sentence captured once more in the other BOS condition (StreamingLLM's claim
that a sink forms on the first token whatever that token is): a run that put no BOS
first captures each sentence with the tokenizer's BOS first, a run that put one there
captures it without. The token at position 0 changes, its position does not.

One extra pass per sentence of at most ``map_tokens`` tokens; per head only the
first-token measures are kept (``results.tables.BosContrastTable``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from attnreport.analyses import sinks
from attnreport.attention import allowed_keys
from attnreport.config import Settings
from attnreport.pass_memo import remembered
from attnreport.results import tables as rt
from attnreport.session import Session, context_length
from attnreport.streaming import stream_layers

Row = tuple[int, int, float, float, int, int]  # layer, head, focus, prob, queries, n_first
COLUMNS = ("sentence", "layer", "head", "first_focus", "first_prob", "n_queries", "n_first")


def contrast_rows(session: Session, ids: torch.Tensor) -> list[Row]:
    """Per (layer, head) of one pass over ``ids`` (n,): the share of queries 1..n-1 whose
    top key is token 0 (ties to the earlier key), the mean probability token 0 gets over
    the queries that can see it (Gu et al.'s score, ``sinks.first_token_scores``), the
    queries, and the queries that can see token 0."""
    rows: list[Row] = []

    def on_layer(spec, raw) -> None:
        computed = raw.computed
        probs = computed.probs  # (head, query, key) over real keys
        allowed = allowed_keys(computed.mask, probs.shape[1]).cpu()
        top_is_first = (probs[:, 1:].argmax(-1) == 0).double()  # ties: the earlier key
        score = sinks.first_token_scores(probs.cpu(), allowed)
        n_first = int(sinks.first_token_counts(allowed, 1)[0])
        for h, share in enumerate(top_is_first.mean(-1).cpu().tolist()):
            rows.append((spec.layer, h, share, float(score[h]), probs.shape[1] - 1, n_first))

    stream_layers(session.model, session.specs, ids, on_layer, False)
    return rows


def contrast_ids(session: Session, token_ids: tuple[int, ...], bos: int) -> list[int] | None:
    """A sentence's ids in the other condition: without the BOS the run put first, or with
    the BOS first; None when the run's ids do not start with the BOS it added."""
    if not session.bos_added:
        return [bos, *token_ids]
    if not token_ids or token_ids[0] != bos:
        return None
    return list(token_ids[1:])


def bos_contrast(
    session: Session, settings: Settings, on_sentence: Callable[[int, int], None] | None = None
) -> rt.BosContrastTable | None:
    """``contrast_rows`` of every sentence in the other condition (``bos``: whether that
    pass had the BOS first); None when the tokenizer has no BOS token. A sentence left
    with fewer than 2 tokens, or past ``map_tokens`` or the context, is skipped.
    ``on_sentence(done, total)`` hears of each sentence contrasted or skipped."""
    bos = getattr(session.loaded.tokenizer, "bos_token_id", None)
    if bos is None:
        return None
    cols: dict[str, list] = {k: [] for k in COLUMNS}
    longest = min(settings.map_tokens, context_length(session.loaded) or settings.map_tokens)
    for done, s in enumerate(session.sentences, start=1):
        ids = contrast_ids(session, tuple(s.token_ids), int(bos))
        if ids is not None and 2 <= len(ids) <= longest:
            key = ("bos_contrast", tuple(ids))
            one = remembered(
                session.model, key, lambda ids=ids: contrast_rows(session, torch.tensor(ids))
            )
            for row in one:
                for k, v in zip(cols, (s.index, *row), strict=True):
                    cols[k].append(v)
        if on_sentence is not None:
            on_sentence(done, len(session.sentences))
    table = {k: np.asarray(v) for k, v in cols.items()}
    table["bos"] = np.full(len(cols["sentence"]), not session.bos_added, dtype=bool)
    return rt.BosContrastTable(**table)
