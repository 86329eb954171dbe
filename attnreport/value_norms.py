"""The first token's value norm against the other tokens', per layer (Gu et al., ICLR 2025:
sink tokens carry small values). One extra blockwise pass per sentence (nothing n x n).
"""

from __future__ import annotations

import numpy as np
import torch

from attnreport.pass_memo import remembered
from attnreport.results import tables as rt
from attnreport.session import Session
from attnreport.streaming import stream_layers


def sentence_value_norms(session: Session, ids: torch.Tensor) -> dict[str, list]:
    """Per (layer, kv head): ‖v_0‖ and the mean of ‖v_j‖ over j >= 1 (v as the attention
    function receives it, after the projection), for one sentence of at least 2 tokens."""
    out: dict[str, list] = {"layer": [], "kv_head": [], "first_norm": [], "other_norm": []}

    def on_layer(spec, raw) -> None:
        norms = raw.computed.v.float().norm(dim=-1)  # (kv_head, key)
        for h, row in enumerate(norms.cpu()):
            out["layer"].append(spec.layer)
            out["kv_head"].append(h)
            out["first_norm"].append(float(row[0]))
            out["other_norm"].append(float(row[1:].mean()))

    stream_layers(session.model, session.specs, ids, on_layer, True)
    return out


def value_norms(session: Session) -> rt.ValueNormsTable:
    """``sentence_value_norms`` of every sentence with at least two tokens, stacked."""
    cols: dict[str, list] = {"sentence": [], "layer": [], "kv_head": [], "first_norm": [],
                             "other_norm": []}  # fmt: skip
    for s in session.sentences:
        if len(s.token_ids) < 2:
            continue
        key = ("value_norms", tuple(s.token_ids))
        one = remembered(
            session.model, key, lambda s=s: sentence_value_norms(session, torch.tensor(s.token_ids))
        )
        cols["sentence"] += [s.index] * len(one["layer"])
        for k, v in one.items():
            cols[k] += v
    return rt.ValueNormsTable(**{k: np.asarray(v) for k, v in cols.items()})
