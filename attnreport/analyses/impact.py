"""How much each head, and the whole attention block, changes the residual stream.

For token ``i`` with residual ``x_i`` entering the block and a head's update ``u_i`` (what
the head adds to it: after a post-attention norm, its share of the norm's output,
``LayerRecord.added``):
``magnitude = ||u_i|| / ||x_i||`` (unitless ratio of Euclidean norms) and
``orientation = cos(u_i, x_i)`` in [-1, 1]. Both are 0 where a norm they divide by is 0.
``||u_i||`` and ``u_i . x_i`` are float32 sums over the head dim (``updates.update_numbers``),
the norms of x and the ratios float64, whatever the record's dtype.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from attnreport.analyses.attention_map import KeyOrder, TopKeys, head_query_columns, top_keys
from attnreport.analyses.tables import Table
from attnreport.analyses.updates import UNSET, gram_factor, update_numbers
from attnreport.records import LayerRecord


def _ratio(numerator: torch.Tensor, denominator: torch.Tensor) -> torch.Tensor:
    """``numerator / denominator``, 0 where the denominator is 0."""
    safe = torch.where(denominator > 0, denominator, torch.ones_like(denominator))
    return torch.where(denominator > 0, numerator / safe, torch.zeros_like(numerator))


def head_impact_table(record: LayerRecord, factor: Any = UNSET) -> Table:
    """The ``head_impact`` table: one row per (head, query), in that order.

    Columns: layer, head, query, magnitude = ||u|| / ||x||, orientation = cos(u, x)
    (clipped to [-1, 1] against rounding; 0 where ||u|| or ||x|| is 0). ||u|| and u.x
    come from each head's input to the output projection (``updates.update_numbers``,
    float32, as the blockwise analyses read them): no (head, query, model) update is
    made. ``factor``: the projection's ``updates.gram_factor`` where the caller has it.
    """
    factor = gram_factor(record.out_weight) if factor is UNSET else factor
    u_norm, dot = update_numbers(
        record.heads_in, record.out_weight, record.x, record.out_scale, factor
    )
    return head_impact_columns(record.layer, record.x, u_norm, dot)


def head_impact_columns(
    layer: int, x: torch.Tensor, u_norm: torch.Tensor, dot: torch.Tensor
) -> Table:
    """The ``head_impact`` rows from each (head, query) update's norm and dot product with
    the residual stream ``x`` (query, model), shared by the dense and blockwise analyses."""
    x_norm = torch.linalg.vector_norm(x.double(), dim=-1)  # (query,)
    magnitude = _ratio(u_norm, x_norm.expand_as(u_norm))
    orientation = _ratio(dot, u_norm * x_norm).clamp(-1.0, 1.0)
    table = head_query_columns(layer, u_norm.shape[0], u_norm.shape[1])
    table.update(
        magnitude=magnitude.reshape(-1).numpy(),
        orientation=orientation.reshape(-1).numpy(),
    )
    return table


def block_impact_table(
    record: LayerRecord, order: KeyOrder | None = None, top: TopKeys | None = None
) -> Table:
    """The ``block_impact`` table: one row per query token.

    Columns: layer, query, magnitude = ||block_out|| / ||x|| (0 where ||x|| = 0; after a
    post-attention norm, its output: ``LayerRecord.block_added``),
    top_first_heads = number of heads whose top key for the query is token 0 (ties to the
    lower key index, so all heads at query 0). ``top``: ``top_keys(record, order)`` where
    the caller has it.
    """
    x_norm = torch.linalg.vector_norm(record.x.to(torch.float64), dim=-1)
    out_norm = torch.linalg.vector_norm(record.block_added.to(torch.float64), dim=-1)
    top_key = (top if top is not None else top_keys(record, order))[0]
    n = record.n_tokens
    return {
        "layer": np.full(n, record.layer, dtype=np.int64),
        "query": np.arange(n, dtype=np.int64),
        "magnitude": _ratio(out_norm, x_norm).numpy(),
        "top_first_heads": (top_key == 0).sum(0).numpy().astype(np.int64),
    }
