"""Per-head focus statistics over the query tokens ``i >= 1`` and their sorted lines.

Row 0 can only attend to itself, so it says nothing about focus and is left out.
With sliding windows a query whose window excludes token 0 cannot focus on it: the
first-token measures (``first_focus``, ``first_prob``) count only the queries that can
see token 0; ``self_focus`` and ``concentration`` count every query ``i >= 1``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from attnreport.analyses.attention_map import KeyOrder, TopKeys, top_keys
from attnreport.analyses.tables import Table, round_sig
from attnreport.records import LayerRecord
from attnreport.vocabulary import FOCUS_STATISTICS


def focus_table(
    record: LayerRecord, order: KeyOrder | None = None, top: TopKeys | None = None
) -> Table:
    """The ``focus`` table: one row per head of the layer, in head order.

    Over queries ``i >= 1``: ``self_focus`` = fraction whose top key is ``i``,
    ``concentration`` = mean of ``p_top1 - p_top2``; over the queries ``i >= 1`` that can
    see token 0: ``first_focus`` = fraction whose top key is 0 and ``first_prob`` = mean
    of ``p_i0`` (Gu et al.'s head score behind Sink_1^eps); ``sink_share`` = mean over
    ``i >= 1`` of the learned sink's probability (0 for models without sinks). All in
    [0, 1]; ``n_queries = n - 1``; ``n_first`` = the queries ``i >= 1`` that can see token
    0 (``n_queries`` without a window). A statistic over no query is 0.0. ``top``:
    ``top_keys(record, order)`` where the caller has it.
    """
    top_key, p_top1, p_top2 = top if top is not None else top_keys(record, order)
    n_heads, n_queries = record.n_heads, record.n_tokens - 1
    table: Table = {
        "layer": np.full(n_heads, record.layer, dtype=np.int64),
        "head": np.arange(n_heads, dtype=np.int64),
    }
    names = ("self_focus", "first_focus", "concentration", "n_queries", "first_prob", "sink_share")
    table.update({name: np.zeros(n_heads, dtype=np.float64) for name in names})
    table["n_queries"] = np.full(n_heads, n_queries, dtype=np.int64)
    table["n_first"] = np.zeros(n_heads, dtype=np.int64)
    if n_queries > 0:
        top = top_key[:, 1:]
        sees_first = record.allowed[1:, 0].cpu()  # (query - 1,) queries whose window holds 0
        table["n_first"] = np.full(n_heads, int(sees_first.sum()), dtype=np.int64)
        table.update(
            self_focus=(top == torch.arange(1, n_queries + 1)).double().mean(1).numpy(),
            first_focus=_mean_over(top == 0, sees_first),
            concentration=(p_top1 - p_top2)[:, 1:].mean(1).numpy(),
            first_prob=_mean_over(record.probs[:, 1:, 0].cpu(), sees_first),
            sink_share=_sink_share(record, n_heads),
        )
    return table


def _mean_over(values: torch.Tensor, rows: torch.Tensor) -> np.ndarray:
    """(head, query) values averaged over the queries where ``rows`` holds; 0 when none does."""
    if not bool(rows.any()):
        return np.zeros(values.shape[0], dtype=np.float64)
    return values[:, rows].double().mean(1).numpy()


def _sink_share(record: LayerRecord, n_heads: int) -> np.ndarray:
    if record.sink_probs is None:
        return np.zeros(n_heads, dtype=np.float64)
    return record.sink_probs[:, 1:].cpu().double().mean(1).numpy()


def _long_form(focus: Table) -> Table:
    """Wide focus table (one column per statistic) to rows of (layer, head, statistic, value)."""
    count = len(focus["head"])
    return {
        "layer": np.tile(np.asarray(focus["layer"], dtype=np.int64), len(FOCUS_STATISTICS)),
        "head": np.tile(np.asarray(focus["head"], dtype=np.int64), len(FOCUS_STATISTICS)),
        "statistic": np.repeat(np.array(FOCUS_STATISTICS), count),
        "value": np.concatenate([np.asarray(focus[s], dtype=np.float64) for s in FOCUS_STATISTICS]),
    }


def _group_lines(statistic: np.ndarray, layer: np.ndarray) -> np.ndarray:
    """0, 1, 2, ... restarting at each new (statistic, layer) run of sorted rows."""
    index = np.arange(len(layer))
    starts = np.ones(len(layer), dtype=bool)
    starts[1:] = (statistic[1:] != statistic[:-1]) | (layer[1:] != layer[:-1])
    return index - np.maximum.accumulate(np.where(starts, index, 0))


def focus_sorted(focus: Table, extra_columns: Sequence[str] = ()) -> Table:
    """The ``focus_sorted`` table: per statistic and layer, heads by value descending.

    ``focus`` is either a wide focus table (columns self_focus, first_focus, concentration)
    or a long one with ``statistic`` and ``value`` columns (e.g. ``focus_pooled``), whose
    ``extra_columns`` (e.g. min, max) are carried along with their row. Columns: statistic,
    layer, line (rank 0..H-1), head (real head id), value, *extra_columns. ``value`` is
    rounded to 6 significant digits first, so equal published values are ties, broken to
    the lower head id; ``value`` never increases with ``line``, so lines never cross.
    Rows are ordered by statistic (as ``FOCUS_STATISTICS``), layer, line.
    """
    if "statistic" not in focus:
        if extra_columns:
            raise ValueError("extra columns need a long focus table (statistic, value)")
        focus = _long_form(focus)
    statistic = np.asarray(focus["statistic"]).astype(str)
    names, inverse = np.unique(statistic, return_inverse=True)
    unknown = sorted(set(names.tolist()) - set(FOCUS_STATISTICS))
    if unknown:
        raise ValueError(f"unknown focus statistics {unknown}")
    stat_index = np.array([FOCUS_STATISTICS.index(n) for n in names], dtype=np.int64)
    stat_index = stat_index[inverse.reshape(-1)]
    layer = np.asarray(focus["layer"], dtype=np.int64)
    head = np.asarray(focus["head"], dtype=np.int64)
    value = round_sig(np.asarray(focus["value"], dtype=np.float64))
    rows = np.lexsort((head, -value, layer, stat_index))
    table: Table = {
        "statistic": statistic[rows],
        "layer": layer[rows],
        "line": _group_lines(stat_index[rows], layer[rows]),
        "head": head[rows],
        "value": value[rows],
    }
    for name in extra_columns:
        table[name] = np.asarray(focus[name])[rows]
    return table
