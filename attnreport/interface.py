"""Our attention function, registered in transformers' attention interface.

transformers 5 routes the attention of most decoder models through one function
signature (``AttentionInterface``): the model's own code computes q and k exactly as
it scores them (after QK-norm and the rotary transform), v, the mask it uses (causal,
sliding window) and hands them over with the scaling and, where the model has them,
the logit soft-cap, the sliding window and learned sink logits. ``attention`` below is
eager attention in the model's own operation order; while a ``Tap`` is active it
records what it computed and may change q, k or v first (interventions).

``routed(model, tap)`` switches the model (and every sub-model's config) to this
function and always switches it back, also when the pass raises. A mask function is
registered under the same name, otherwise transformers builds no mask for it.

Shape letters: ``batch`` (always 1 here), ``head``, ``kv_head``, ``query``, ``key``, ``d``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

import torch
from torch import nn
from transformers import AttentionInterface
from transformers.masking_utils import AttentionMaskInterface, eager_mask

NAME = "attnreport"


@dataclass(frozen=True)
class Computed:
    """What the function computed for one call (batch removed).

    ``logits`` (head, query, key) = scaling * q.k (+ ALiBi) before the soft-cap and the
    mask; ``scores`` = the capped logits plus the mask (what the softmax reads);
    ``probs`` over real keys; ``sink_probs`` (head, query) the sink's share, or None;
    ``context`` (head, query, d) = probs @ v, the per-head attention output.
    """

    q: torch.Tensor  # (head, query, d) as scored
    k: torch.Tensor  # (kv_head, key, d) as scored
    v: torch.Tensor  # (kv_head, key, d)
    mask: torch.Tensor | None  # (query, key) additive, as the model passed it
    scaling: float
    softcap: float | None
    sliding_window: int | None
    sinks: torch.Tensor | None  # (head,) learned sink logits, or (head, query): one per query
    score_bias: torch.Tensor | None  # (head, query or 1, key) e.g. ALiBi, added to the logits
    logits: torch.Tensor
    scores: torch.Tensor
    probs: torch.Tensor
    sink_probs: torch.Tensor | None
    context: torch.Tensor


class Tap(Protocol):
    """Receives every call of the function while active."""

    leading_rows: int  # the blockwise attention keeps the probabilities of this many queries

    def modify(self, module: nn.Module, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor):
        """Return (q, k, v) to score, each (batch, heads, n, d); identity when not intervening."""
        ...

    def record(self, module: nn.Module, computed: Computed) -> None: ...


_ACTIVE: list[Tap] = []


@dataclass(frozen=True)
class AttentionCall:
    """One call of an attention function, as transformers makes it, typed: ``query``
    (batch, head, n, d), ``key`` and ``value`` (batch, kv_head, n, d) as scored (after the
    tap's change, if any); ``scaling`` resolved (d ** -0.5 when the model gives none)."""

    module: nn.Module
    query: torch.Tensor
    key: torch.Tensor
    value: torch.Tensor
    mask: torch.Tensor | None  # the model's mask (additive floats, or booleans when blockwise)
    scaling: float
    softcap: float | None
    window: int | None  # sliding window in tokens
    sinks: torch.Tensor | None  # sink logits (head,): ``s_aux``; Inkling 2's (batch, head, query)
    bias: torch.Tensor | None  # an additive score bias (ALiBi): ``score_bias``
    tap: Tap | None  # records what was computed; None when no capture is active

    def repeated_kv(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``key`` and ``value`` with each kv head repeated for its query heads (GQA)."""
        groups = self.query.shape[1] // self.key.shape[1]
        return repeat_kv(self.key, groups), repeat_kv(self.value, groups)


def tapped(fn: Callable[[AttentionCall], Any]) -> Callable[..., Any]:
    """``fn`` (an attention function of ours) as transformers calls it: the active tap's
    change of q, k and v (an intervention) is applied here, in one place for every such
    function, and ``fn`` is handed the call typed (``AttentionCall``)."""

    @functools.wraps(fn)
    def call(
        module: nn.Module,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        attention_mask: torch.Tensor | None,
        scaling: float | None = None,
        dropout: float = 0.0,
        softcap: float | None = None,
        sliding_window: int | None = None,
        s_aux: torch.Tensor | None = None,
        score_bias: torch.Tensor | None = None,
        **_kwargs: object,
    ):
        tap = _ACTIVE[-1] if _ACTIVE else None
        if s_aux is None and isinstance(_kwargs.get("sinks"), torch.Tensor):
            s_aux = _kwargs["sinks"][
                ..., 0
            ]  # Inkling 2: a sink logit per query (batch, head, query)
        if score_bias is None and isinstance(_kwargs.get("position_bias"), torch.Tensor):
            score_bias = _kwargs["position_bias"]  # Inkling's relative position bias, added alike
        scale = float(query.shape[-1] ** -0.5 if scaling is None else scaling)
        if not causal(module, attention_mask, _kwargs):  # not over the tokens: the model's own
            return eager_attention(AttentionCall(module, query, key, value, None, scale, softcap,
                                                 sliding_window, s_aux, score_bias, None))  # fmt: skip
        if score_bias is None and attention_mask is not None:  # Doge: biases in the mask
            attention_mask, score_bias = split_mask(attention_mask, query.shape[1])
        if tap is not None:
            query, key, value = tap.modify(module, query, key, value)
        return fn(AttentionCall(module, query, key, value, attention_mask, scale, softcap,
                                sliding_window, s_aux, score_bias, tap))  # fmt: skip

    return call


def causal(module: nn.Module, mask: torch.Tensor | None, kwargs: dict) -> bool:
    """Whether a call is causal attention, a decoder's attention over its tokens: it has a
    mask, or its module says it is causal. No mask and ``is_causal`` False is attention with
    no mask at all, by transformers' own rule (its SDPA function reads it so); in a causal
    LM that is not attention over the tokens but, in Inkling 2 since transformers 5.24, the
    attention of each block over the residual stream's earlier block outputs
    (``BlockAttentionResidual``). Such a call is the model's own eager attention: no layer
    is made of it, no tap sees it, no intervention changes it."""
    if mask is not None:
        return True
    return bool(kwargs.get("is_causal", getattr(module, "is_causal", True)))


def split_mask(mask: torch.Tensor, heads: int) -> tuple[torch.Tensor, torch.Tensor | None]:
    """(mask, score bias): a float mask holding learned biases where it allows keys (Doge's
    dynamic mask, (batch, head, query, key)) split into 0 / blocked and the biases, which
    are added to the logits as a score bias; any other mask as it is, with no bias."""
    if mask.dtype == torch.bool or not mask.is_floating_point():
        return mask, None
    blocked = mask <= torch.finfo(mask.dtype).min / 2
    if not bool((~blocked & (mask != 0)).any()):  # every call of a plain mask: no float copy
        return mask, None
    batch, _, n, keys = mask.shape
    bias = mask.masked_fill(blocked, 0.0)
    return mask.masked_fill(~blocked, 0.0), bias.expand(batch, heads, n, keys)


def repeat_kv(t: torch.Tensor, groups: int) -> torch.Tensor:
    """(batch, kv_head, n, d) -> (batch, head, n, d): each kv head serves ``groups`` query heads."""
    return t if groups == 1 else t.repeat_interleave(groups, dim=1)


def _logits(q, k_all, scaling: float, score_bias) -> torch.Tensor:
    if score_bias is None:  # scaled in place: the values of matmul(...) * scaling
        return torch.matmul(q, k_all.transpose(2, 3)).mul_(scaling)  # (batch, head, query, key)
    batch, heads, n, d = q.shape
    bias = score_bias.reshape(batch * heads, -1, k_all.shape[2])
    fused = bias.baddbmm(  # ALiBi models add the bias in one fused op; so do we
        q.reshape(batch * heads, n, d), k_all.reshape(batch * heads, -1, d).transpose(1, 2),
        beta=1.0, alpha=scaling,
    )  # fmt: skip
    return fused.view(batch, heads, n, -1)


def _softmax(scores: torch.Tensor, sinks: torch.Tensor | None, dtype: torch.dtype):
    """Probabilities over real keys and the sink's share (as gpt-oss computes them; a sink
    logit per query (batch, head, query) in float32, as Inkling 2 computes them)."""
    probs, sink_probs = softmax_parts(scores, sinks)
    return probs.to(dtype), sink_probs


def softmax_parts(scores: torch.Tensor, sinks: torch.Tensor | None):
    """``_softmax`` before its probabilities are rounded to the model's dtype: float32
    without sinks, the dtype the sink's softmax ran in with them."""
    if sinks is None:
        return torch.softmax(scores, dim=-1, dtype=torch.float32), None
    batch, heads, n, _ = scores.shape
    if sinks.dim() == 1:
        combined = torch.cat([scores, sinks.reshape(1, -1, 1, 1).expand(batch, -1, n, -1)], -1)
    else:
        combined = torch.cat([scores, sinks.reshape(batch, heads, n, 1)], -1).float()
    combined = combined - combined.max(dim=-1, keepdim=True).values
    full = torch.softmax(combined, dim=-1, dtype=combined.dtype)
    return full[..., :-1], full[..., -1]


def eager_attention(call: AttentionCall) -> tuple[torch.Tensor, torch.Tensor]:
    """Eager attention; returns (output (batch, query, head, d), probs (batch, head, query, key))."""
    query, key, value, softcap, s_aux, score_bias = (
        call.query,
        call.key,
        call.value,
        call.softcap,
        call.sinks,
        call.bias,
    )
    k_all, v_all = call.repeated_kv()
    logits = _logits(query, k_all, call.scaling, score_bias)
    capped = logits if softcap is None else torch.tanh(logits / softcap) * softcap
    scores = capped if call.mask is None else capped + call.mask
    probs, sink_probs = _softmax(scores, s_aux, value.dtype)  # GPT-J scores in float32
    context = torch.matmul(probs, v_all)  # (batch, head, query, d)
    if call.tap is not None:
        mask = None if call.mask is None else call.mask[0, 0]
        call.tap.record(
            call.module,
            Computed(
                query[0], key[0], value[0], mask, call.scaling, softcap, call.window,
                None if s_aux is None else (s_aux[0] if s_aux.dim() == 3 else s_aux).detach(),
                None if score_bias is None else score_bias.reshape(query.shape[1], -1, key.shape[2]),
                logits[0], scores[0], probs[0],
                None if sink_probs is None else sink_probs[0], context[0],
            ),
        )  # fmt: skip
    return context.transpose(1, 2).contiguous(), probs


attention = tapped(eager_attention)  # what the models call
AttentionInterface.register(NAME, attention)
AttentionMaskInterface.register(NAME, eager_mask)  # the additive masks eager attention uses


def _configs(model: nn.Module) -> list[object]:
    """Every config object the model's modules read ``_attn_implementation`` from."""
    found: dict[int, object] = {}
    pending = [m.config for m in model.modules() if hasattr(m, "config")]
    while pending:
        config = pending.pop()
        if id(config) in found or not hasattr(config, "_attn_implementation_internal"):
            continue
        found[id(config)] = config
        for name in getattr(config, "sub_configs", {}) or {}:
            sub = getattr(config, name, None)
            if sub is not None:
                pending.append(sub)
    return list(found.values())


@contextmanager
def implementation(model: nn.Module, name: str) -> Iterator[None]:
    """The model (and every sub-model's config) set to the attention implementation
    ``name`` inside the context; exactly the values that were there are put back.

    Sets ``_attn_implementation`` on each config directly (``set_attn_implementation``
    refuses models whose source it cannot inspect and logs warnings). A model the user
    loaded with another implementation (``sdpa``) is analysed under ``eager``, as one
    ``load_model`` loads is."""
    saved = [(c, c._attn_implementation_internal) for c in _configs(model)]  # type: ignore[attr-defined]
    try:
        for config, _ in saved:
            config._attn_implementation_internal = name  # type: ignore[attr-defined]
        yield
    finally:
        for config, value in saved:
            config._attn_implementation_internal = value  # type: ignore[attr-defined]


@contextmanager
def routed(model: nn.Module, tap: Tap, name: str = NAME) -> Iterator[None]:
    """Run the model's attention through ``attention`` (or the function registered as
    ``name``) with ``tap`` active; always restore (``implementation``)."""
    _ACTIVE.append(tap)
    try:
        with implementation(model, name):
            yield
    finally:
        _ACTIVE.remove(tap)
