"""Next-token log-probabilities of a long pass, a block of positions at a time.

A pass over n tokens ends in (n, vocab) logits: 1.6 GB at 8192 tokens of a 49k-token
vocabulary, and the grids of ``attnreport.interventions`` compare two such passes. For a
long input the pass keeps only the final hidden states (n, hidden), the decoder's output
after its final norm, and ``next_token_kl`` applies the model's LM head (and the final
logit soft-cap of models that have one) to a block of positions at a time.

``check_head`` proves the reconstruction on every pass: the model's own logits of the
last position (``logits_to_keep=1``) must equal ``head_logits`` of its final hidden state,
so a model that transforms its logits in some other way is refused, never misreported.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch
from torch import nn

from attnreport.errors import AttnReportError

ROWS = 256  # positions per block: (ROWS, vocab) float32 logits at a time


@contextmanager
def final_hidden(model: nn.Module, sink: list[torch.Tensor]) -> Iterator[None]:
    """Append the decoder's final hidden states (query, hidden) to ``sink`` during a pass."""

    def hook(_module, _args, output):
        hidden = output[0] if isinstance(output, tuple) else output.last_hidden_state
        sink.append(hidden.detach()[0])

    handle = model.get_decoder().register_forward_hook(hook)
    try:
        yield
    finally:
        handle.remove()


@torch.no_grad()
def head_logits(model: nn.Module, hidden: torch.Tensor) -> torch.Tensor:
    """(rows, vocab) float32 logits of final hidden states (rows, hidden), as the model's
    head computes them: its output embedding, then its final soft-cap where it has one."""
    logits = model.get_output_embeddings()(hidden).float()
    cap = getattr(model.config, "final_logit_softcapping", None)
    return logits if cap is None else torch.tanh(logits / cap) * cap


def check_head(model: nn.Module, hidden: torch.Tensor, last_logits: torch.Tensor) -> None:
    """AttnReportError unless ``head_logits`` of the last position equals the model's own."""
    ours = head_logits(model, hidden[-1:])[0]
    theirs = last_logits.float().reshape(-1)
    if not torch.allclose(ours, theirs, rtol=1e-4, atol=1e-4 * float(theirs.abs().max())):
        raise AttnReportError(
            "this model transforms its final logits in a way the long-input interventions "
            "cannot reproduce block by block; raise map_tokens above the sentence length"
        )


@torch.no_grad()
def next_token_kl(model: nn.Module, base: torch.Tensor, changed: torch.Tensor) -> torch.Tensor:
    """KL(p_base || p_changed) of the next-token distributions at each position, in nats
    (query,), from the final hidden states of two passes (query, hidden), ROWS at a time."""
    out = []
    for start in range(0, base.shape[0], ROWS):
        rows = slice(start, start + ROWS)
        p = torch.log_softmax(head_logits(model, base[rows]), dim=-1)
        q = torch.log_softmax(head_logits(model, changed[rows]), dim=-1)
        out.append((p.exp() * (p - q)).sum(-1).clamp_min(0.0))
    return torch.cat(out).cpu()
