"""The induction probes run through the model: per (layer, head), the induction and
previous-token scores on ``analyses.probes``' synthetic repeated sequences.

Each probe is one pass with the dense capture (``streaming.stream_layers``); each layer's
probabilities, exactly as the model computed them, are read as soon as the layer has
run and then dropped. A probe is 2 x 50 tokens (plus a BOS), so nothing here is large.
"""

from __future__ import annotations

import numpy as np
import torch

from attnreport.analyses.probes import (
    induction_scores,
    make_probes,
    previous_token_scores,
    probe_offset,
    probe_table,
)
from attnreport.analyses.tables import Table
from attnreport.attention import RawLayer
from attnreport.models.layout import LayerSpec
from attnreport.session import Session
from attnreport.streaming import stream_layers


def session_probes(session: Session) -> list[list[int]]:
    """The probes of ``session``'s model: its tokenizer's ordinary ids (no special token,
    none past the embedding), with its BOS first when the sentences start with one."""
    tokenizer = session.loaded.tokenizer
    vocab = min(len(tokenizer), int(session.model.config.vocab_size))
    bos = tokenizer.bos_token_id if session.bos_added else None
    return make_probes(vocab, tokenizer.all_special_ids, bos)


def probe_scores(model: torch.nn.Module, specs: list[LayerSpec], probes: list[list[int]]) -> Table:
    """``probes.probe_table`` of ``probes`` (each a token-id list) on ``model``."""
    per_probe = []
    for probe in probes:
        offset = probe_offset(probe)
        per_layer: list[tuple[np.ndarray, np.ndarray]] = []

        def read(_spec: LayerSpec, raw: RawLayer, per_layer=per_layer, offset=offset) -> None:
            probs = raw.computed.probs.detach().float().cpu()  # (head, query, key)
            per_layer.append((induction_scores(probs, offset), previous_token_scores(probs)))

        stream_layers(model, specs, torch.tensor(probe), read, blockwise=False)
        per_probe.append(per_layer)
    return probe_table(per_probe)
