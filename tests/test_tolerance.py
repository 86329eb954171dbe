"""The dtype-aware tolerance against simulated model arithmetic in each dtype.

A "model" computes in its dtype (products accumulated exactly, then rounded, as a kernel
that accumulates in float32 does for short sums); we reconstruct in float32 from the same
low-precision inputs. The errors must stay within ``tolerance`` and come close to it
(the rule is not vacuous), and a float32 rule (1e-4 x magnitude) must fail in bfloat16.
"""

from __future__ import annotations

import math

import pytest
import torch

from attnreport.tolerance import describe, machine_epsilon, tolerance, unit_roundoff

DTYPES = (torch.float32, torch.bfloat16, torch.float16)
HEADS, D, MODEL, N = 9, 64, 576, 96


def test_machine_epsilon_and_unit_roundoff():
    assert machine_epsilon(torch.float32) == 2.0**-23
    assert machine_epsilon(torch.bfloat16) == 2.0**-7
    assert machine_epsilon(torch.float16) == 2.0**-10
    assert unit_roundoff(torch.bfloat16) == 2.0**-8


def inputs(dtype: torch.dtype, seed: int):
    gen = torch.Generator().manual_seed(seed)
    context = (torch.randn(N, HEADS * D, generator=gen) * 3).to(dtype)
    weight = (torch.randn(HEADS * D, MODEL, generator=gen) * 0.2).to(dtype)
    return context, weight


@pytest.mark.parametrize("dtype", DTYPES)
def test_block_output_reconstruction_is_within_tolerance(dtype):
    worst = 0.0
    for seed in range(3):
        context, weight = inputs(dtype, seed)
        model_out = (context.double() @ weight.double()).to(dtype)  # one rounding
        per_head = torch.einsum(
            "hqd,hdm->hqm",
            context.float().view(N, HEADS, D).transpose(0, 1),
            weight.float().view(HEADS, D, MODEL),
        )
        ours = per_head.sum(0)
        magnitude = max(model_out.abs().max().item(), per_head.abs().max().item())
        bound = tolerance(dtype, magnitude, inner=HEADS * D, roundings=1)
        error = (ours - model_out.float()).abs().max().item()
        assert error <= bound, describe(dtype, magnitude, HEADS * D)
        worst = max(worst, error / bound)
    assert worst > 0.02  # the bound is within 50x of what the arithmetic really does


@pytest.mark.parametrize("dtype", DTYPES)
def test_score_reconstruction_is_within_tolerance(dtype):
    gen = torch.Generator().manual_seed(1)
    q = (torch.randn(HEADS, N, D, generator=gen) * 2).to(dtype)
    k = (torch.randn(HEADS, N, D, generator=gen) * 2).to(dtype)
    scaling = D**-0.5
    model_score = ((q.double() @ k.double().transpose(1, 2)).to(dtype) * scaling).to(dtype)
    ours = q.float() @ k.float().transpose(1, 2) * scaling  # e.g. the content term
    magnitude = model_score.abs().max().item()
    error = (ours - model_score.float()).abs().max().item()
    assert error <= tolerance(dtype, magnitude, inner=D, roundings=2)
    assert error > tolerance(dtype, magnitude, inner=D, roundings=2) / 20


def test_a_float32_tolerance_fails_exact_bfloat16_arithmetic():
    context, weight = inputs(torch.bfloat16, 0)
    model_out = (context.double() @ weight.double()).to(torch.bfloat16)
    exact = context.double() @ weight.double()
    magnitude = model_out.abs().max().item()
    error = (exact - model_out.double()).abs().max().item()
    assert error > 1e-4 * magnitude  # even the exact value misses the old rule
    assert error <= tolerance(torch.bfloat16, magnitude, inner=HEADS * D)


def test_tolerance_formula_and_refusals():
    expected = (2 * 2.0**-8 + 4 * math.sqrt(64) * 2.0**-24) * 10
    assert tolerance(torch.bfloat16, 10.0, inner=64, roundings=2) == pytest.approx(expected)
    assert "u(bfloat16)" in describe(torch.bfloat16, 10.0, 64, 2)
    with pytest.raises(ValueError):
        tolerance(torch.float32, -1.0)
    with pytest.raises(ValueError):
        tolerance(torch.float32, 1.0, inner=0)
