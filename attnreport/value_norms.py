"""The first token's value norm against the other tokens', per layer (Gu et al., ICLR 2025:
sink tokens carry small values). The sentence's own analysis pass collects them
(``value_norm_collector``, handed to ``sentence_pass.analyze_pass``); a set whose
sentences did not (partials written before they did) gets one extra blockwise pass per
sentence (nothing n x n).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import torch

from attnreport.attention import RawLayer
from attnreport.models.layout import LayerSpec
from attnreport.pass_memo import remembered
from attnreport.results import tables as rt
from attnreport.session import Session
from attnreport.streaming import stream_layers

COLUMNS = ("layer", "kv_head", "first_norm", "other_norm")
Collected = dict[str, list]  # COLUMNS -> one value per (layer, kv head)


def value_norm_collector() -> tuple[Collected, Callable[[LayerSpec, RawLayer], None]]:
    """An empty ``Collected`` and the layer handler that fills it: per (layer, kv head),
    ‖v_0‖ and the mean of ‖v_j‖ over j >= 1 (v as the attention function receives it,
    after the projection). A sentence of one token adds nothing."""
    out: Collected = {name: [] for name in COLUMNS}

    def on_layer(spec: LayerSpec, raw: RawLayer) -> None:
        norms = raw.computed.v.float().norm(dim=-1)  # (kv_head, key)
        if norms.shape[-1] < 2:
            return
        for h, row in enumerate(norms.cpu()):
            out["layer"].append(spec.layer)
            out["kv_head"].append(h)
            out["first_norm"].append(float(row[0]))
            out["other_norm"].append(float(row[1:].mean()))

    return out, on_layer


def sentence_value_norms(session: Session, ids: torch.Tensor) -> Collected:
    """``value_norm_collector``'s rows of one sentence, from a pass of its own."""
    out, on_layer = value_norm_collector()
    stream_layers(session.model, session.specs, ids, on_layer, True)
    return out


def value_norms(
    session: Session, collected: Mapping[int, Mapping[str, Any]] | None = None
) -> rt.ValueNormsTable:
    """The rows of every sentence with at least two tokens, stacked in sentence order:
    ``collected[index]`` where its analysis pass collected them (every sentence, or None),
    else ``sentence_value_norms`` (remembered per loaded model)."""
    cols: dict[str, list] = {"sentence": [], **{name: [] for name in COLUMNS}}
    for s in session.sentences:
        if len(s.token_ids) < 2:
            continue
        if collected is not None:
            one = collected[s.index]
        else:
            key = ("value_norms", tuple(s.token_ids))
            ids = torch.tensor(s.token_ids)
            one = remembered(session.model, key, lambda ids=ids: sentence_value_norms(session, ids))
        cols["sentence"] += [s.index] * len(one["layer"])
        for k in COLUMNS:
            cols[k] += np.asarray(one[k]).tolist()
    return rt.ValueNormsTable(**{k: np.asarray(v) for k, v in cols.items()})
