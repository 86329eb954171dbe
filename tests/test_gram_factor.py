"""The output projection's Gram factor, remembered per projection (``updates.projection_factor``):
the same factor as computing it afresh, computed once per weight, and computed again
whenever the weight changes in place or is replaced, so no study reads a stale one."""

from __future__ import annotations

import torch
from torch import nn

from attnreport.analyses import updates
from attnreport.analyses.roles import value_norms


def per_head(proj: nn.Linear, heads: int = 3) -> torch.Tensor:
    """(head, d, model) as ``models.layout.per_head_out`` slices a Linear's weight."""
    return proj.weight.detach().t().reshape(heads, -1, proj.out_features)


def counted(monkeypatch) -> list[int]:
    calls: list[int] = []
    real = updates.gram_factor

    def counting(w):
        calls.append(1)
        return real(w)

    monkeypatch.setattr(updates, "gram_factor", counting)
    return calls


def test_a_projection_is_factored_once_and_again_when_its_weight_changes(monkeypatch):
    torch.manual_seed(0)
    proj = nn.Linear(12, 8, bias=False)  # 3 heads of 4 dims into a model of 8
    calls = counted(monkeypatch)
    first = updates.projection_factor(proj, per_head(proj))
    assert torch.equal(first, updates.gram_factor(per_head(proj)))  # what is computed afresh
    calls.clear()
    assert updates.projection_factor(proj, per_head(proj)) is first and calls == []
    with torch.no_grad():  # an optimiser's step: the same tensor, changed in place
        proj.weight.mul_(2.0)
    changed = updates.projection_factor(proj, per_head(proj))
    assert calls == [1] and torch.allclose(changed, 2 * first, rtol=1e-6)
    proj.weight = nn.Parameter(torch.randn(8, 12))  # a weight replaced (a loaded state)
    replaced = updates.projection_factor(proj, per_head(proj))
    assert calls == [1, 1] and torch.equal(replaced, updates.gram_factor(per_head(proj)))


def test_value_norms_read_the_same_with_a_remembered_factor():
    torch.manual_seed(1)
    proj = nn.Linear(12, 8, bias=False)
    v = torch.randn(1, 5, 4)  # one kv head read by 3 query heads
    fresh = value_norms(v, per_head(proj), groups=3)
    remembered = value_norms(v, per_head(proj), 3, updates.projection_factor(proj, per_head(proj)))
    assert torch.equal(fresh, remembered)
    written = torch.einsum(
        "hkd,hdm->hkm", v.repeat_interleave(3, 0).double(), per_head(proj).double()
    )
    assert torch.allclose(fresh, written.norm(dim=-1), rtol=1e-5)  # ||v_j W_O^h|| itself


def test_a_weight_on_the_meta_device_is_never_remembered(monkeypatch):
    """An offloaded layer's projection holds a meta weight between uses: its factor comes
    from the weight materialised for this use, every time."""
    proj = nn.Linear(12, 8, bias=False, device="meta")
    weight = torch.randn(12, 8).reshape(3, 4, 8)
    calls = counted(monkeypatch)
    updates.projection_factor(proj, weight)
    updates.projection_factor(proj, weight)
    assert calls == [1, 1]
