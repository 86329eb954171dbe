"""Where `attnreport verify --dtype bfloat16` loses its checks 2 and 3 (issue 12).

For each dtype, runs today's capture on the default sentence set and measures, over all
layers and sentences, the errors of checks 2 and 3 computed several ways:

check 2 (sum of head updates + b_o vs the model's block output):
  today     updates = (probs_bf16 @ v) @ W_o per head in the model dtype, summed in it
  sum32     the same per-head updates, summed in float32
  ctx32     the model's own o_proj input (context, in the model dtype) upcast, u = ctx @ W_o
            in float32, summed in float32 (what a float32 analysis of the capture gives)
check 3 (sum of score terms vs the score):
  today     terms computed in the model dtype (matmuls of bf16 q/k) and summed in it
  f32       terms computed in float32 from the upcast captured q_raw, k_raw, q, k, position
            = s_model - c q_raw.k_raw (float32), summed in float32, against the model's s

Prints one markdown table with, per quantity, the max abs error, the magnitude it is
compared with, and the error in units of eps(dtype) x magnitude.

    python benchmarks/bf16_diagnosis.py
"""

from __future__ import annotations

import torch

from attnreport.attention import additive_mask, attend, heads_of, repeat_kv, score_terms
from attnreport.capture import capture_attention
from attnreport.session import open_session
from attnreport.tolerance import machine_epsilon


def context_hooks(model, family) -> tuple[list, list]:
    """Forward pre-hooks on each o_proj that keep its input (the per-head context)."""
    seen: list[torch.Tensor] = []
    handles = []
    for block in family.blocks(model):
        proj = getattr(family.attention(block), family.out_proj)
        handles.append(proj.register_forward_pre_hook(lambda _m, args: seen.append(args[0][0])))
    return seen, handles


def float_terms(spec, q_raw, k_raw, scores) -> tuple[torch.Tensor, torch.Tensor]:
    """(sum of the four terms, model score) in float32 over allowed entries."""
    f = torch.float32
    groups, c = spec.layout.groups, spec.layout.scaling
    q_raw, k_raw = q_raw.to(f), repeat_kv(k_raw.to(f), groups)
    bq, bk = spec.q_bias.to(f)[:, None], repeat_kv(spec.k_bias.to(f), groups)[:, None]
    content = (q_raw - bq) @ (k_raw - bk).transpose(1, 2) * c
    bias = bq @ (k_raw - bk).transpose(1, 2) * c
    query_only = (((q_raw - bq) * bk).sum(-1, keepdim=True) + (bq * bk).sum(-1)[..., None]) * c
    scores = scores.to(f)
    position = scores - q_raw @ k_raw.transpose(1, 2) * c
    return position + bias + content + query_only, scores


def measure(dtype: str) -> dict[str, tuple[float, float]]:
    session = open_session("default", None, dtype=dtype)
    model, family = session.model, session.loaded.family
    worst: dict[str, tuple[float, float]] = {}

    def keep(name: str, error: torch.Tensor, scale: torch.Tensor) -> None:
        e, s = error.abs().max().item(), scale.abs().max().item()
        old = worst.get(name, (0.0, 0.0))
        worst[name] = (max(old[0], e), max(old[1], s))

    for ids in session.token_tensors():
        seen, handles = context_hooks(model, family)
        try:
            capture = capture_attention(model, session.specs, ids)
        finally:
            for h in handles:
                h.remove()
        for spec, raw, ctx in zip(session.specs, capture.raw, seen, strict=True):
            q_raw, k_raw, q, k, v = heads_of(spec, raw)
            scores, probs, updates, _ = attend(spec, raw, q, k, v)
            out = raw.block_out
            keep("check 2 today", updates.sum(0) + spec.out_bias - out, out)
            keep("check 2 sum32", updates.float().sum(0) + spec.out_bias.float() - out.float(), out)
            n, d = ctx.shape[0], spec.layout.head_dim
            per_head = ctx.float().view(n, -1, d).transpose(0, 1)  # (head, query, d)
            u32 = torch.einsum("hqd,hdm->hqm", per_head, spec.out_weight.float())
            keep("check 2 ctx32", u32.sum(0) + spec.out_bias.float() - out.float(), out)
            allowed = additive_mask(raw.mask, n, scores.dtype) == 0
            terms = score_terms(spec, raw, q_raw, k_raw, scores, allowed)
            mask = allowed.expand_as(scores)
            keep("check 3 today", (sum(terms.values()) - scores)[mask], scores[mask])
            total, s32 = float_terms(spec, q_raw, k_raw, scores)
            keep("check 3 f32", (total - s32)[mask], s32[mask])
    return worst


def main() -> None:
    print("| dtype | quantity | max abs error | max abs magnitude | error / (eps x magnitude) |")
    print("| --- | --- | ---: | ---: | ---: |")
    for dtype in ("float32", "bfloat16"):
        eps = machine_epsilon(getattr(torch, dtype))
        for name, (error, scale) in measure(dtype).items():
            units = error / (eps * scale) if scale else 0.0
            print(f"| {dtype} | {name} | {error:.3g} | {scale:.3g} | {units:.3g} |")


if __name__ == "__main__":
    main()
