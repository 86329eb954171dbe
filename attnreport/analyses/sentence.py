"""All per-sentence tables, computed one layer at a time while records stream in.

``analyze_layer`` needs only one ``LayerRecord``; ``merge_layers`` stacks the per-layer
results and adds ``focus_sorted``, which needs every layer's focus rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from attnreport.analyses.attention_map import KeyOrder, key_order, top_keys, top_table
from attnreport.analyses.breakdown import breakdown_table
from attnreport.analyses.focus import focus_sorted, focus_table
from attnreport.analyses.impact import block_impact_table, head_impact_table
from attnreport.analyses.probes import massive_activation_row
from attnreport.analyses.roles import roles_of_probs, value_norms
from attnreport.analyses.split_updates import SPLIT_COLUMNS, split_updates
from attnreport.analyses.tables import Table, concat_tables
from attnreport.analyses.updates import UNSET
from attnreport.records import LayerRecord

# Per-layer tables, then the full ``tables`` of ``sentences/NNN.json`` in schema order.
LAYER_TABLES: tuple[str, ...] = ("top", "breakdown", "focus", "head_impact", "block_impact")
SENTENCE_TABLES: tuple[str, ...] = (
    "top",
    "breakdown",
    "focus",
    "focus_sorted",
    "head_impact",
    "block_impact",
)
# Per-layer tables a pass adds when it computes head roles (``layer_role_tables``);
# ``merge_layers`` keeps them (as any further table) when every layer has them.
ROLE_TABLES: tuple[str, ...] = ("head_roles", "massive_activations")


def analyze_layer(
    record: LayerRecord, ranks: int = 3, order: KeyOrder | None = None, factor: Any = UNSET
) -> dict[str, Table]:
    """Every per-layer table of one record: top, breakdown, focus, head_impact, block_impact.

    ``ranks`` is ``breakdown_ranks``. Keys are sorted once (pass ``order`` from
    ``key_order``; its first ``max(ranks, 2)`` ranks are all the tables read).
    ``factor``: the output projection's ``updates.gram_factor``, where the caller has it.
    """
    if order is None:
        order = key_order(record.scores, record.allowed, max(ranks, 2))
    top = top_keys(record, order)  # read by three tables
    return {
        "top": top_table(record, order, top),
        "breakdown": breakdown_table(record, ranks, order),
        "focus": focus_table(record, order, top),
        "head_impact": head_impact_table(record, factor),
        "block_impact": block_impact_table(record, order, top),
    }


def layer_role_tables(
    record: LayerRecord,
    token_ids: torch.Tensor | None,
    out_weight: torch.Tensor,
    factor: Any = UNSET,
    top: torch.Tensor | None = None,
) -> dict[str, Table]:
    """``head_roles`` and ``massive_activations`` of one layer (``analyses.roles``,
    ``analyses.probes``). ``token_ids`` (n,) of the sentence, ``out_weight`` (head, d,
    model) the layer's output projection per head; ``factor`` its Gram factor where the
    caller remembers it (``updates.projection_factor``); ``top`` (head, query) each row's
    top key, where the caller has it. A float32 model's probabilities are the softmax of
    its scores as computed: their entropy is read from the scores (``roles._entropy``),
    as the blockwise analyses read it; another dtype's were rounded after it, so the
    entropy takes their logarithms."""
    groups = record.n_heads // int(record.v.shape[0])
    norms = value_norms(record.v, out_weight.cpu(), groups, factor)
    scores = record.scores if record.dtype == torch.float32 else None
    return {
        "head_roles": roles_of_probs(
            record.layer,
            record.probs,
            record.allowed.cpu(),
            token_ids,
            norms,
            record.sink_probs,
            scores,
            None if scores is None else top,
        ),
        "massive_activations": massive_activation_row(record.layer, record.x),
    }


def _with_split_updates(merged: Mapping[str, Table]) -> Table:
    """The merged ``focus`` table with each head's update sizes split by its top key
    (``split_updates``), computed from every query before anything is binned."""
    focus = dict(merged["focus"])
    split = split_updates(merged["top"], merged["head_impact"])
    for key in ("layer", "head"):
        if not np.array_equal(split[key], focus[key]):
            raise ValueError("the focus rows must be in (layer, head) order")
    focus.update({name: split[name] for name in SPLIT_COLUMNS})
    return focus


def merge_layers(per_layer: Sequence[Mapping[str, Table]]) -> dict[str, Table]:
    """One sentence's tables: each per-layer table concatenated in the order given, plus
    ``focus_sorted`` from the merged focus rows, the focus rows' update sizes split by
    the top key (``split_updates``), and every further table (``ROLE_TABLES``,
    those of ``analyses.layer_tables``) that every layer has. Keys in schema order
    (``SENTENCE_TABLES``, then the further tables in the first layer's order).
    ValueError when ``per_layer`` is empty.
    """
    if not per_layer:
        raise ValueError("a sentence needs at least one analysed layer")
    merged = {name: concat_tables([tables[name] for tables in per_layer]) for name in LAYER_TABLES}
    merged["focus"] = _with_split_updates(merged)
    merged["focus_sorted"] = focus_sorted(merged["focus"])
    further = [
        name
        for name in per_layer[0]
        if name not in LAYER_TABLES and all(name in tables for tables in per_layer)
    ]
    merged.update({name: concat_tables([tables[name] for tables in per_layer]) for name in further})
    return {name: merged[name] for name in (*SENTENCE_TABLES, *further)}
