"""Checks that the captured numbers are the model's own (``attnreport verify``).

1. probabilities our attention function computed from q, k and the mask the model
   passed it vs the model's own ``output_attentions`` from its own eager code (with
   its soft-cap and sinks);
2. sum of head updates + output bias (float32, from the captured per-head outputs) vs
   the model's attention block output;
3. sum of the score terms (float32) vs the logit before any soft-cap (the score itself
   for models without one), where the mask allows;
4. for a model with a post-attention norm (Gemma, OLMo 2): sum of each head's share of
   the norm's output (``LayerRecord.added``, plus the scaled bias) vs that output.

Errors are maxima over layers, heads and sentences, compared in float32. Each tolerance
follows the model's dtype (``attnreport.tolerance``): how often the model rounded the
reference to its dtype, plus our float32 sums, times the largest magnitude compared;
``Check.rule`` shows the numbers. For float32 models they are a few float32 units of the
magnitude; for bfloat16 the reference itself is only known to ``2^-8`` of it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attnreport import tolerance as tol
from attnreport.capture import capture_attention
from attnreport.errors import AttnReportError
from attnreport.models.families import Family
from attnreport.models.layout import LayerSpec, discover
from attnreport.models.placement import input_device
from attnreport.records import LayerRecord


@dataclass(frozen=True)
class Check:
    """One check's outcome. ``tolerance`` is the absolute bound ``max_error`` must not
    exceed: ``tolerance.tolerance(dtype, magnitude, inner, roundings)``; ``rule`` spells it out."""

    name: str
    max_error: float
    tolerance: float
    dtype: str = "float32"  # the model's dtype the tolerance follows
    magnitude: float = 1.0  # largest |value| among the reference and the values summed
    inner: int = 1  # products our float32 computation adds per value
    roundings: int = 1  # times the model rounded the reference to its dtype
    rule: str = ""  # tolerance.describe(...): the bound with its numbers

    @property
    def passed(self) -> bool:
        return self.max_error <= self.tolerance


def _max_abs(*tensors: torch.Tensor) -> float:
    return max((t.abs().max().item() for t in tensors if t.numel()), default=0.0)


def _as_the_model_reports(record: LayerRecord, model_probs: torch.Tensor) -> torch.Tensor:
    """Our (head, query, key) probabilities as the model's ``output_attentions`` gives them.
    With learned sinks, most models report p with the sink's share taken out (rows sum to
    1 - sink); Granite-SWA reports the softmax over the keys alone and scales the output
    by the sink afterwards (rows sum to 1): then ours are compared renormalised over the
    keys, p / (1 - sink), which is the same softmax."""
    if record.sink_probs is None:
        return record.probs
    model_rows, our_rows = model_probs.sum(-1), record.probs.sum(-1)
    if (model_rows - our_rows).abs().max() <= (model_rows - 1).abs().max():
        return record.probs
    return record.probs / our_rows[..., None]


@dataclass
class _Maxima:
    """Running maxima of the three errors and the magnitudes they are compared with."""

    probs: float = 0.0
    prob_scale: float = 0.0
    keys: int = 1
    updates: float = 0.0
    block_scale: float = 0.0
    heads_inner: int = 1
    terms: float = 0.0
    score_scale: float = 0.0
    head_dim: int = 1
    post: float | None = None  # the fourth check's error, where a layer has a post-attention norm
    post_scale: float = 0.0

    def add_layer(
        self, record: LayerRecord, model_probs: torch.Tensor, spec: LayerSpec | None = None
    ) -> None:
        """One layer's errors; ``spec`` (its ``LayerSpec``) for a family whose model reports
        its probabilities in another head layout (``Family.reported``)."""
        model_probs = model_probs.detach().cpu().float()
        reported = spec.family.reported if spec else None
        probs = reported(spec, record) if reported else _as_the_model_reports(record, model_probs)
        self.probs = max(self.probs, (probs - model_probs).abs().max().item())
        self.prob_scale = max(self.prob_scale, _max_abs(probs, model_probs))
        self.keys = max(self.keys, record.n_tokens)
        summed = record.updates.sum(0) + record.out_bias
        self.updates = max(self.updates, (summed - record.block_out).abs().max().item())
        self.block_scale = max(
            self.block_scale, _max_abs(record.block_out, summed, record.updates, record.out_bias)
        )
        self.heads_inner = max(self.heads_inner, record.n_heads * int(record.context.shape[-1]))
        allowed = record.allowed.expand_as(record.logits)
        if not bool(allowed.any()):  # a mask of learned biases (Doge's dynamic mask)
            raise AttnReportError(
                f"layer {record.layer}: the model's attention mask allows no key outright "
                "(missing: a mask of 0 for allowed keys and -inf for blocked ones)"
            )
        terms = sum(record.terms.values())
        self.terms = max(self.terms, (terms - record.logits)[allowed].abs().max().item())
        parts = [t.expand_as(record.logits)[allowed] for t in record.terms.values()]
        self.score_scale = max(self.score_scale, _max_abs(record.logits[allowed], *parts))
        self.head_dim = max(self.head_dim, int(record.q_raw.shape[-1]))
        if record.out_scale is not None and record.post_out is not None:
            shares = record.added.sum(0) + record.out_bias * record.out_scale
            self.post = max(self.post or 0.0, (shares - record.post_out).abs().max().item())
            self.post_scale = max(self.post_scale, _max_abs(record.post_out, shares, record.added))


def _check(
    name: str, error: float, dtype: torch.dtype, magnitude: float, inner: int, roundings: int
):
    return Check(
        name=name,
        max_error=error,
        tolerance=tol.tolerance(dtype, magnitude, inner, roundings),
        dtype=str(dtype).removeprefix("torch."),
        magnitude=magnitude,
        inner=inner,
        roundings=roundings,
        rule=tol.describe(dtype, magnitude, inner, roundings),
    )


def verify_sentences(
    model: torch.nn.Module, specs: list[LayerSpec], sentences: list[torch.Tensor]
) -> list[Check]:
    """Run the three checks over ``sentences`` (token id tensors of shape (n,))."""
    maxima = _Maxima()
    dtype = torch.float32
    for ids in sentences:
        capture = capture_attention(model, specs, ids)
        with torch.no_grad():
            out = model(
                input_ids=ids[None].to(input_device(model)),
                output_attentions=True,
                use_cache=False,
            )
        for spec, record, model_probs in zip(
            specs,
            capture.records(),
            own_probs(out, specs, int(model.config.num_hidden_layers)),
            strict=True,
        ):
            maxima.add_layer(record, model_probs[0], spec)
            dtype = record.dtype
    return checks_from(maxima, dtype)


def own_probs(out, specs: list[LayerSpec], n_blocks: int) -> list[torch.Tensor]:
    """The model's ``output_attentions`` of the layers found, in order. A hybrid that
    reports something for each of its ``n_blocks`` blocks (MiniMax's lightning-attention
    layers return a matrix too) is read at the found layers' indices; otherwise the
    reported ones."""
    attentions = list(out.attentions or ())
    if len(attentions) == n_blocks and len(specs) < n_blocks:
        found = [attentions[s.layer] for s in specs]
        if all(a is not None for a in found):
            return found
    return [a for a in attentions if a is not None]


def checks_from(m: _Maxima, dtype: torch.dtype) -> list[Check]:
    """The three checks with the tolerances of ``docs/precision.md``.

    1. probabilities: ours and the model's are each rounded once to its dtype (two
       roundings apart where the eager code orders its softmax differently: GPT-2's
       runs in the model's dtype, ours in float32); the softmax sums ``n`` exponentials;
    2. block output: the model rounds its output projection once; we add ``H x d``
       products in float32;
    3. score terms: the model's logit is rounded twice (the product q.k, then the
       scaling); our terms are dot products over ``d``;
    4. post-attention norm (only where a layer has one): its input and its output are each
       rounded once to the dtype; our shares add up ``H x d`` products as in 2.
    """
    post = [] if m.post is None else [_check(
        "sum of head shares of the post-attention norm's output vs that output",
        m.post, dtype, m.post_scale, m.heads_inner, 2,
    )]  # fmt: skip
    return [
        _check(
            "attention probabilities vs the model's output_attentions",
            m.probs, dtype, m.prob_scale, m.keys, 2,
        ),
        _check(
            "sum of head updates + output bias vs block output",
            m.updates, dtype, m.block_scale, m.heads_inner, 1,
        ),
        _check(
            "sum of score terms vs pre-softmax (pre-cap) score",
            m.terms, dtype, m.score_scale, m.head_dim, 2,
        ),
        *post,
    ]  # fmt: skip


PROBE_TOKENS = 8  # the load-time self-check's probe: long enough for a window of 4 to bite


def verified_layers(family: Family, model: torch.nn.Module) -> list[LayerSpec]:
    """Discovery, then ``self_check``: the layers of a model whose capture reproduces its own
    numbers, or a one-line ``AttnReportError``. This, not a list of names, is what admits
    an architecture; an error inside the model's code during either pass is refused in
    one line too."""
    try:
        specs = discover(family, model)
        self_check(model, specs)
    except AttnReportError:
        raise
    except (RuntimeError, TypeError, ValueError, IndexError, KeyError, AttributeError) as err:
        first = f"{type(err).__name__}: {err}".splitlines()[0][:200]
        raise AttnReportError(
            f"{model.config.model_type}: the model's attention cannot be captured ({first})"
        ) from err
    return specs


def self_check(model: torch.nn.Module, specs: list[LayerSpec]) -> None:
    """The three checks on a ``PROBE_TOKENS`` probe, layer by layer; a one-line
    ``AttnReportError`` naming the first check and layer that fail."""
    failed = _first_failure(model, specs)
    if failed is not None:
        layer, check = failed
        raise AttnReportError(
            f"{model.config.model_type}: self-check failed at layer {layer}: {check.name} "
            f"(error {check.max_error:.3g} > tolerance {check.tolerance:.3g}); attnreport "
            "refuses rather than report numbers it cannot verify"
        )


def _first_failure(model: torch.nn.Module, specs: list[LayerSpec]) -> tuple[int, Check] | None:
    """(layer, check) of the first check that fails on the probe, layer by layer, or None."""
    ids = torch.arange(min(PROBE_TOKENS, int(model.config.vocab_size)))
    capture = capture_attention(model, specs, ids)
    with torch.no_grad():
        out = model(
            input_ids=ids[None].to(input_device(model)), output_attentions=True, use_cache=False
        )
    attentions = own_probs(out, specs, int(model.config.num_hidden_layers))
    if len(attentions) != len(specs):
        raise AttnReportError(
            f"{model.config.model_type}: output_attentions gives {len(attentions)} layers of "
            f"probabilities for {len(specs)} attention layers (missing: the model's own "
            "probabilities to check against)"
        )
    for spec, record, model_probs in zip(specs, capture.records(), attentions, strict=True):
        maxima = _Maxima()
        maxima.add_layer(record, model_probs[0], spec)
        for check in checks_from(maxima, record.dtype):
            if not check.passed:
                return record.layer, check
    return None
