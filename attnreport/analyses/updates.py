"""Norms of what each head writes, without making its (head, query, model) updates.

Head h writes ``u = c W`` for an output ``c`` (query, d) through its slice ``W`` (d, model)
of the output projection. Its norm needs only W's (d, d) Gram matrix ``W W^T``: with the
Cholesky factor ``L L^T = W W^T``, ``||c W|| = ||c L||``, a sum of squares (no
cancellation) over d instead of over the model's width. Its dot product with the
residual stream x is ``c . (W x)``, and ``W x`` for every head at once is one product of
x with the projection's weight. A post-attention norm scales u by a factor per query and
model dimension, which no (d, d) matrix carries: there u is made, one block at a time.

Shape letters: ``head``, ``query``, ``key``, ``d`` (head dim), ``model`` (hidden size).
"""

from __future__ import annotations

import weakref
from typing import Any

import torch

from attnreport.records import after_norm

UNSET: Any = object()  # no factor given: ``value_norms`` and the like factor the weight
# output projection -> (its weight, weakly; that weight's storage, version and per-head
# shape; its ``gram_factor``)
_FACTORS: weakref.WeakKeyDictionary[
    torch.nn.Module, tuple[weakref.ref, tuple, torch.Tensor | None]
] = weakref.WeakKeyDictionary()


def gram_factor(out_weight: torch.Tensor) -> torch.Tensor | None:
    """(head, d, d) float32 ``L`` with ``L L^T = W W^T`` for each head's ``W`` (d, model) of
    ``out_weight`` (head, d, model), factored in float64; None when a head's ``W W^T`` is
    singular (its rows dependent: the norms are then taken of the updates themselves)."""
    w = out_weight.double()
    factor, info = torch.linalg.cholesky_ex(torch.bmm(w, w.transpose(1, 2)))
    return None if bool((info != 0).any()) else factor.float()


def projection_factor(out_proj: torch.nn.Module, out_weight: torch.Tensor) -> torch.Tensor | None:
    """``gram_factor(out_weight)``, ``out_weight`` (head, d, model) being ``out_proj``'s
    weight per head, remembered per output projection while its weight is the same tensor
    with the same storage and version: every sentence of a study reads the same factor
    instead of factoring it again (about 2 ms a layer, a tenth of a 64-token sentence's
    analysis). A weight replaced, moved or changed in place (an optimiser's step, a loaded
    state) is factored again; an offloaded layer's weight, materialised anew for each use,
    always is."""
    weight = getattr(out_proj, "weight", None)
    if not isinstance(weight, torch.Tensor) or weight.device.type == "meta":
        return gram_factor(out_weight)
    stamp = (weight.data_ptr(), weight._version, tuple(out_weight.shape))
    known = _FACTORS.get(out_proj)
    if known is not None and known[0]() is weight and known[1] == stamp:
        return known[2]
    factor = gram_factor(out_weight)
    _FACTORS[out_proj] = (weakref.ref(weight), stamp, factor)
    return factor


def written_norms(values: torch.Tensor, out_weight: torch.Tensor, factor: torch.Tensor | None):
    """(head, n) float64: ``||values_i W||`` of each head's ``values`` (head, n, d)."""
    if factor is not None:
        return torch.linalg.vector_norm(torch.bmm(values.float(), factor), dim=-1).double()
    written = torch.bmm(values.float(), out_weight.float())  # (head, n, model)
    return torch.linalg.vector_norm(written, dim=-1).double()


def update_numbers(
    context: torch.Tensor,
    out_weight: torch.Tensor,
    x: torch.Tensor,
    out_scale: torch.Tensor | None,
    factor: torch.Tensor | None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(``||u||``, ``u . x``), each (head, query) float64, of the updates ``u = context W``
    (times ``out_scale`` (query, model) after a post-attention norm, ``records.after_norm``)
    with ``context`` (head, query, d) and the residual stream ``x`` (query, model).
    ``factor``: ``gram_factor(out_weight)``."""
    heads, n, d = context.shape
    context = context.float()
    weight = out_weight.float().permute(2, 0, 1).reshape(-1, heads * d)  # (model, head * d)
    seen = x.float() if out_scale is None else x.float() * out_scale.float()  # u.(s x) = (u s).x
    towards = (seen @ weight).reshape(n, heads, d).transpose(0, 1)  # (head, query, d): W x
    dot = (context * towards).sum(-1).double()
    if out_scale is None:
        return written_norms(context, out_weight, factor), dot
    u = after_norm(torch.bmm(context, out_weight.float()), out_scale)  # (head, query, model)
    return torch.linalg.vector_norm(u, dim=-1).double(), dot
