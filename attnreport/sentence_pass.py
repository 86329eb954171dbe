"""One sentence's per-layer tables, each layer analysed inside the model's pass, then dropped.

A sentence of at most ``map_tokens`` tokens runs through the dense capture: each layer's
``LayerRecord`` (n x n logits, scores, probabilities and score terms) gives the tables and
the attention maps, and is dropped before the next layer runs, so one layer's n x n
tensors are alive at a time. A longer sentence runs through the blockwise attention
(``attnreport.streaming``) and its tables come from ``analyze_layer_blockwise`` on the
layer's O(n x d) tensors: memory grows with layers x n x d plus one block of query rows,
never with n x n. Both give the same tables (``tests/test_blockwise.py``,
``tests/test_streaming.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields, replace

import torch

from attnreport.analyses import analyze_layer, attention_triangles, key_order, merge_layers
from attnreport.analyses.blockwise import analyze_layer_blockwise
from attnreport.analyses.heads import QueryBlock
from attnreport.analyses.layer_tables import layer_tables
from attnreport.analyses.roles import value_norms
from attnreport.analyses.row_reductions import RoleInputs, reduce_block
from attnreport.analyses.sentence import layer_role_tables
from attnreport.analyses.tables import Table, round_sig
from attnreport.analyses.updates import projection_factor
from attnreport.attention import RawLayer, layer_record
from attnreport.config import Settings
from attnreport.models.layout import LayerSpec
from attnreport.models.placement import host
from attnreport.records import LayerRecord
from attnreport.results import AttentionMaps, SentenceTables
from attnreport.results.types import sentence_tables_from
from attnreport.scratch import Scratch
from attnreport.streaming import BlockReducer, layer_tensors, stream_layers

LayerProgress = Callable[[int, int], None]  # (layers done, layers in the model)
LayerObserver = Callable[[LayerSpec, RawLayer], None]  # sees each layer's pass, dense or not


def to_cpu(record: LayerRecord) -> LayerRecord:
    """Analyses work on CPU tensors; a no-op for a model on the CPU."""
    if record.scores.device.type == "cpu":
        return record
    moved = {
        f.name: getattr(record, f.name).cpu()
        for f in fields(record)
        if isinstance(getattr(record, f.name), torch.Tensor)
    }
    return replace(record, terms={k: v.cpu() for k, v in record.terms.items()}, **moved)


def analyze_pass(
    model: torch.nn.Module,
    specs: list[LayerSpec],
    token_ids: torch.Tensor,
    settings: Settings,
    on_layer: LayerProgress | None = None,
    observe: LayerObserver | None = None,
    maps_wanted: bool = True,
) -> tuple[SentenceTables, AttentionMaps | None]:
    """The sentence's tables (``merge_layers``, typed) and, up to ``map_tokens`` tokens, its
    attention maps. ``on_layer(done, total)`` hears of each layer analysed; ``observe``
    reads each layer's raw pass too (the value norms: ``value_norms.value_norm_collector``),
    so what it measures needs no pass of its own. ``maps_wanted`` False: a sentence whose
    results file is not kept (it has no page): the same tables, no maps (None), and none of
    the cost of rounding and ranking them (a third of the dense path's analysis time).
    The tables read only the first ranks (``key_order``'s ``depth``); where the maps are
    made, their sort of every row (``attention_triangles``) gives those ranks too."""
    keep_maps = token_ids.shape[0] <= settings.map_tokens
    make_maps = keep_maps and maps_wanted
    per_layer: list[dict[str, Table]] = []
    maps = AttentionMaps([], [], {})
    depth = max(settings.breakdown_ranks, 2)  # the ranks the tables read (top 2, breakdown)

    def dense(spec: LayerSpec, raw: RawLayer) -> None:
        if observe is not None:
            observe(spec, raw)
        record = to_cpu(layer_record(spec, raw))
        order = None
        if make_maps:  # the maps sort every row: the tables read their first ranks
            kept = attention_triangles(record, depth)
            maps.scores.append(kept["scores"])
            maps.rank_fixes.update(kept["rank_fixes"])
            maps.sinks.append(sink_logits(raw.computed.sinks))  # type: ignore[union-attr]
            order = kept["order"]
        if order is None:
            order = key_order(record.scores, record.allowed, depth)
        out_weight = record.out_weight  # (the record's copy: an offloaded weight loads once)
        factor = projection_factor(spec.out_proj, out_weight)
        tables = analyze_layer(record, settings.breakdown_ranks, order, factor)
        top = order.order[..., 0]  # each row's top key (the pass's rows all have one)
        tables.update(layer_role_tables(record, token_ids.cpu(), out_weight, factor, top))
        tables.update(layer_tables(record))
        per_layer.append(tables)
        if on_layer is not None:
            on_layer(len(per_layer), len(specs))

    ranks, ids = settings.breakdown_ranks, token_ids.cpu()

    def blockwise(spec: LayerSpec, raw: RawLayer) -> None:
        if observe is not None:
            observe(spec, raw)
        tensors, reduced = layer_tensors(spec, raw), raw.computed.reduced  # type: ignore[union-attr]
        factor = projection_factor(spec.out_proj, tensors.out_weight)
        per_layer.append(
            analyze_layer_blockwise(
                tensors, ranks, roles=True, token_ids=ids, reduced=reduced, factor=factor
            )
        )
        if on_layer is not None:
            on_layer(len(per_layer), len(specs))

    handler, reducer = (dense, None) if keep_maps else (blockwise, block_reducer(specs, ids, ranks))
    stream_layers(model, specs, token_ids, handler, not keep_maps, reducer)
    sinks = maps.sinks if any(layer is not None for layer in maps.sinks or ()) else None
    numbers = tuple(s.layer for s in specs)  # a hybrid's attention layers: not 0..n-1
    layers = None if numbers == tuple(range(len(specs))) else numbers
    return sentence_tables_from(merge_layers(per_layer)), (
        AttentionMaps(maps.scores, sinks, maps.rank_fixes, None, layers) if make_maps else None
    )


def block_reducer(specs: list[LayerSpec], token_ids: torch.Tensor, ranks: int) -> BlockReducer:
    """The ``streaming.BlockReducer`` of a long sentence's pass: each block the model's
    attention computes is reduced to what ``analyze_layer_blockwise`` reads
    (``row_reductions.reduce_block``, with the head-role values), on the CPU. A layer's
    value norms are read from its first block's call."""
    spec_of = {id(s.attention): s for s in specs}
    inputs: dict[int, RoleInputs] = {}
    scratch = Scratch()  # the role values' temporaries, one buffer for every block

    def reduce(call, start: int, stop: int, logits, scores, probs, sink):
        spec = spec_of[id(call.module)]
        if start == 0:
            value = call.value[0].detach().cpu()
            out_weight = host(spec.out_weight)
            factor = projection_factor(spec.out_proj, out_weight)
            norms = value_norms(value, out_weight, spec.layout.groups, factor)
            inputs[spec.layer] = RoleInputs(token_ids, norms)
        roles = inputs[spec.layer]
        block = [t if t is None else t.detach().cpu() for t in (logits, scores, probs, sink)]
        n_ranks = max(ranks, 2)  # the top two make the concentration
        return reduce_block(
            *block, QueryBlock(start, stop, 0), n_ranks, call.window, roles, scratch
        )

    return reduce


def sink_logits(sinks: torch.Tensor | None) -> list[float] | list[list[float]] | None:
    """A layer's learned sink logits (head,), or (head, query) where each query has its own
    (Inkling 2), as written: 6 significant digits."""
    if sinks is None:
        return None
    return [round_sig(float(v)) if v.dim() == 0 else sink_logits(v) for v in sinks.float().cpu()]
