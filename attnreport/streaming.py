"""One pass that hands each layer to its analysis as soon as the layer has run, then drops it.

``stream_layers`` runs the model once with the capture hooks of ``attnreport.capture``
and calls ``on_layer(spec, raw)`` from inside the pass, right after the layer's output
projection has run; the layer's tensors are dropped when it returns, so at most one
layer's captured tensors are alive at a time.

With ``blockwise=True`` the model's attention runs through ``blockwise_attention``: the
same eager arithmetic as ``interface.attention`` (the model's own operation order), but
over blocks of query rows, each holding every key its queries may see, so the softmax is
exact and no (head, query, key) tensor larger than one block ever exists. It records a
``Scored`` (q, k, v, the options, the per-head output; nothing n x n) instead of a
``Computed``; ``layer_tensors`` turns it into the ``LayerTensors`` that the blockwise
analyses read. The LM head runs on the last position only (``logits_to_keep=1``): the
analyses need no logits, and (query, vocab) logits would be the largest tensor of a long
pass.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields

import torch
from torch import nn
from transformers import AttentionInterface
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

from attnreport.analyses.heads import LayerTensors, QueryBlock, block_rows
from attnreport.attention import RawLayer, gated_heads, unrotated
from attnreport.capture import (
    LayerTap,
    Slots,
    forward_logits,
    instrumented,
    layer_hooks,
    raw_layer,
)
from attnreport.errors import AttnReportError
from attnreport.interface import NAME, AttentionCall, _logits, softmax_parts, tapped
from attnreport.models.layout import LayerSpec
from attnreport.scratch import Scratch

STREAM_NAME = "attnreport-blockwise"

LayerHandler = Callable[[LayerSpec, RawLayer], None]
# (call, start, stop, logits, scores, probs, sink share) of one block of queries
# start..stop-1 over keys 0..stop-1 (batch removed; probabilities float32) -> that
# block's per-query numbers, each (head, query, ...): ``analyses.row_reductions``. The
# block's tensors are the pass's scratch, written over by the next block: a reducer
# returns new tensors, never views of them
BlockReducer = Callable[..., dict[str, torch.Tensor]]


@dataclass(frozen=True)
class Scored:
    """What ``blockwise_attention`` recorded for one call (batch removed), all O(n x d).

    Fields as in ``interface.Computed``; ``leading_probs`` (head, m, m) are the
    probabilities of the first ``m`` queries over keys 0..m-1 (causal: all they may see),
    where the tap asked for them (``leading_rows``), else None.
    """

    q: torch.Tensor  # (head, query, d) as scored
    k: torch.Tensor  # (kv_head, key, d) as scored
    v: torch.Tensor  # (kv_head, key, d)
    scaling: float
    softcap: float | None
    sliding_window: int | None
    sinks: torch.Tensor | None  # (head,), or (head, query): one per query (Inkling 2)
    score_bias: torch.Tensor | None  # (head, query or 1, key), e.g. ALiBi
    context: torch.Tensor  # (head, query, d) probs @ v
    leading_probs: torch.Tensor | None = None
    # the tap's ``reduce_block`` of every block, concatenated along the query axis (CPU)
    reduced: dict[str, torch.Tensor] | None = None


def _block_scores(query, k_all, mask, start, stop, options, scratch=None):
    """(logits, scores), each (batch, head, stop - start, stop): queries start..stop-1 over
    keys 0..stop-1 in ``interface.attention``'s order of operations. ``scores`` are the
    soft-capped logits with the dtype's min where the mask blocks a key (filled in place,
    only in the columns the mask blocks somewhere: the keys before ``start`` are every
    query's without a window). ``scratch``: a ``(Scratch, capacity)`` whose buffer the
    logits are written into (valid until the next block's)."""
    scaling, softcap, window, _, score_bias, _ = options
    bias = None
    if score_bias is not None:
        rows = score_bias if score_bias.shape[-2] == 1 else score_bias[..., start:stop, :]
        bias = rows[..., :stop]
    q, k = query[:, :, start:stop], k_all[:, :, :stop]
    if scratch is None or bias is not None:
        logits = _logits(q, k, scaling, bias)
    else:  # the same product as ``_logits``, into the pass's buffer
        memory, capacity = scratch
        out = memory.tensor("logits", (*q.shape[:3], stop), q.dtype, q.device, capacity)
        logits = torch.matmul(q, k.transpose(2, 3), out=out).mul_(scaling)
    scores = logits if softcap is None else torch.tanh(logits / softcap) * softcap
    if mask is None:
        allowed = QueryBlock(start, stop, 0).allowed(window).to(query.device)
    else:
        allowed = mask[0, 0, start:stop, :stop]
    blocked = ~allowed
    columns = blocked.any(0).nonzero()
    if len(columns):
        lo, hi = int(columns[0]), int(columns[-1]) + 1
        fill = torch.finfo(scores.dtype).min
        scores[..., lo:hi].masked_fill_(blocked[:, lo:hi], fill)  # logits' allowed keys stay
    return logits, scores


def _block_softmax(scores, options, start, stop, scratch=None):
    """``interface.softmax_parts`` of a block: (probabilities, the sink's share or None);
    ``scratch`` as ``_block_scores``'s: the probabilities of a model without sinks are
    written into its buffer."""
    sinks = options[3]
    if sinks is not None and sinks.dim() == 3:  # a sink logit per query: the block's rows
        sinks = sinks[..., start:stop]
    if scratch is None or sinks is not None:
        return softmax_parts(scores, sinks)
    memory, capacity = scratch
    out = memory.tensor("probs", tuple(scores.shape), torch.float32, scores.device, capacity)
    return torch.softmax(scores, dim=-1, dtype=torch.float32, out=out), None


def _block_probs(query, k_all, mask, start, stop, options) -> torch.Tensor:
    """(batch, head, stop - start, stop) probabilities of queries start..stop-1 over keys
    0..stop-1, rounded to v's dtype as ``interface.attention`` rounds them."""
    _, scores = _block_scores(query, k_all, mask, start, stop, options)
    return _block_softmax(scores, options, start, stop)[0].to(options[-1])


def blockwise_attention(call: AttentionCall) -> tuple[torch.Tensor, None]:
    """Eager attention over blocks of queries; returns (output (batch, query, head, d), None).
    A tap's ``reduce_block`` (if it has one) reduces each block as it is made."""
    query, attention_mask, tap = call.query, call.mask, call.tap
    k_all, v_all = call.repeated_kv()
    n = query.shape[2]
    options = (call.scaling, call.softcap, call.window, call.sinks, call.bias, v_all.dtype)
    context = torch.empty(  # (batch, head, query, d)
        (*query.shape[:3], v_all.shape[-1]), dtype=v_all.dtype, device=query.device
    )
    reduce = getattr(tap, "reduce_block", None)
    parts = []
    rows = block_rows(query.shape[1], n)
    # every block's logits and probabilities in the same two buffers (the pass's, where
    # it has a tap): the reducer copies what it keeps
    memory = getattr(tap, "scratch", None) or Scratch()
    scratch = (memory, query.shape[0] * query.shape[1] * min(rows, n) * n)
    for start in range(0, n, rows):
        stop = min(start + rows, n)
        logits, scores = _block_scores(query, k_all, attention_mask, start, stop, options, scratch)  # fmt: skip
        wide, sink = _block_softmax(scores, options, start, stop, scratch)
        context[:, :, start:stop] = torch.matmul(wide.to(v_all.dtype), v_all[:, :, :stop])
        if reduce is not None:
            share = None if sink is None else sink[0].float()
            parts.append(reduce(call, start, stop, logits[0], scores[0], wide[0].float(), share))
    if tap is not None:
        m = min(tap.leading_rows, n)
        leading = _block_probs(query, k_all, attention_mask, 0, m, options)[0] if m else None
        bias = None if call.bias is None else call.bias.reshape(query.shape[1], -1, n)
        sinks = None if call.sinks is None else call.sinks.detach()
        reduced = {k: torch.cat([p[k] for p in parts], dim=1) for k in parts[0]} if parts else None
        scored = Scored(
            query[0], call.key[0], call.value[0], call.scaling, call.softcap, call.window,
            sinks, bias, context[0], leading, reduced,
        )  # fmt: skip
        tap.record(call.module, scored)  # type: ignore[arg-type]
    return context.transpose(1, 2).contiguous(), None


def boolean_mask(*args, **kwargs) -> torch.Tensor | None:
    """The model's mask as booleans (True: the key is seen), never skipped for causality:
    an (n, n) bool is a quarter of eager attention's float mask."""
    kwargs.pop("allow_is_causal_skip", None)
    kwargs.pop("dtype", None)
    return sdpa_mask(*args, allow_is_causal_skip=False, **kwargs)


AttentionInterface.register(STREAM_NAME, tapped(blockwise_attention))
AttentionMaskInterface.register(STREAM_NAME, boolean_mask)


def alibi_slopes(score_bias: torch.Tensor | None, n: int) -> torch.Tensor | None:
    """(head,) slopes of an ALiBi bias ``slope_h * j`` (as BLOOM builds it); ValueError for a
    score bias of any other form (the blockwise analyses know only this one)."""
    if score_bias is None:
        return None
    last = score_bias[:, -1, :].float()  # (head, key)
    slopes = last[:, 1] if n > 1 else torch.zeros(last.shape[0], device=last.device)
    expected = slopes[:, None] * torch.arange(n, dtype=torch.float32, device=last.device)
    if not torch.allclose(last, expected, rtol=1e-5, atol=1e-6):
        raise ValueError("a score bias that is not ALiBi (slope x key position)")
    return slopes


def layer_tensors(spec: LayerSpec, raw: RawLayer) -> LayerTensors:
    """The ``LayerTensors`` of one streamed layer (``raw.computed`` a ``Scored``), on the CPU."""
    scored = raw.computed
    if scored.sinks is not None and scored.sinks.dim() > 1:
        raise AttnReportError(
            f"layer {spec.layer}: the blockwise analyses do not support a sink logit per query; "
            "pass fewer tokens"
        )
    q_raw, k_raw = unrotated(spec, raw)
    heads, kv_heads, d = scored.q.shape[0], scored.k.shape[0], scored.q.shape[-1]
    tensors = LayerTensors(
        layer=spec.layer,
        x=raw.x,
        q_raw=q_raw,
        k_raw=k_raw,
        q=scored.q,
        k=scored.k,
        v=scored.v,
        q_bias=torch.zeros(heads, d) if spec.q_bias is None else spec.q_bias,
        k_bias=torch.zeros(kv_heads, d) if spec.k_bias is None else spec.k_bias,
        out_weight=spec.out_weight,
        out_bias=spec.out_bias,
        block_out=raw.block_out,
        scaling=scored.scaling,
        softcap=scored.softcap,
        window=scored.sliding_window,
        alibi_slopes=alibi_slopes(scored.score_bias, scored.q.shape[1]),
        sinks=None if scored.sinks is None else scored.sinks.float(),
        out_scale=raw.out_scale,
        gated=None if raw.gated is None else gated_heads(raw.gated, heads),
        context=scored.context,
    )
    return on_cpu(tensors)


def on_cpu(tensors: LayerTensors) -> LayerTensors:
    """The blockwise analyses run on the CPU; a no-op for tensors already there."""
    moved = {}
    for f in fields(tensors):
        value = getattr(tensors, f.name)
        moved[f.name] = value.detach().cpu() if isinstance(value, torch.Tensor) else value
    return LayerTensors(**moved)


def _hand_over(spec: LayerSpec, slots: Slots, on_layer: LayerHandler):
    def hook(_module, _args, _output):
        try:
            on_layer(spec, raw_layer(slots))
        finally:
            slots.clear()  # the layer's tensors go as soon as it is analysed

    return hook


def stream_layers(
    model: nn.Module,
    specs: list[LayerSpec],
    input_ids: torch.Tensor,
    on_layer: LayerHandler,
    blockwise: bool,
    reduce_block: BlockReducer | None = None,
) -> None:
    """Run the model once on ``input_ids`` (n,); ``on_layer`` gets every layer in turn.

    ``blockwise`` selects ``blockwise_attention`` (``raw.computed`` is a ``Scored``, with
    ``reduced`` filled by ``reduce_block`` where one is given), else the dense
    ``interface.attention`` (``raw.computed`` is a ``Computed`` with the layer's n x n
    logits, scores and probabilities).
    """
    slots = {s.layer: Slots() for s in specs}
    tap = LayerTap(specs, slots)
    tap.reduce_block = reduce_block
    hooks = []
    for spec in specs:
        hooks += layer_hooks(spec, slots[spec.layer], tap.copies)  # fills block_out first:
        hooks.append((spec.out_proj, "post", _hand_over(spec, slots[spec.layer], on_layer)))
    name = STREAM_NAME if blockwise else NAME
    with instrumented(model, specs, tap, hooks, name):
        forward_logits(model, input_ids, logits_to_keep=1)
