"""The induction probes run through the model: per (layer, head), the induction and
previous-token scores on ``analyses.probes``' synthetic repeated sequences.

All probes have one length, so they run as one batch through the model's own eager
attention with ``output_attentions=True``: the probabilities are the model's own
(``attnreport verify`` checks that ours equal them), and one batched pass costs a fifth
of ten captured ones, which keeps the probes within the analysis' cost budget. The
LM head runs on the last position only. A probe is 2 x 50 tokens (plus a BOS), or
2 x R with R as long as fits when the model's context is shorter than that. A model whose
heads are not the ones it reports (JetMoE's routed slots: ``Family.reported``) runs
adapted, so the probabilities are those of the heads analysed (checked against the
model's own by the self-check).
"""

from __future__ import annotations

from contextlib import nullcontext

import torch

from attnreport.analyses.probes import (
    PROBE_LENGTH,
    induction_scores,
    make_probes,
    previous_token_scores,
    probe_offset,
    probe_table,
)
from attnreport.analyses.tables import Table
from attnreport.errors import AttnReportError
from attnreport.models.families import Family
from attnreport.models.placement import host, input_device
from attnreport.session import Session, context_length


def session_probes(session: Session) -> list[list[int]]:
    """The probes of ``session``'s model: its tokenizer's ordinary ids (no special token,
    none past the embedding), with its BOS first when the sentences start with one."""
    tokenizer = session.loaded.tokenizer
    vocab = min(len(tokenizer), int(session.model.config.vocab_size))
    bos = tokenizer.bos_token_id if session.bos_added else None
    length = probe_length(context_length(session.loaded), bos is not None)
    return make_probes(vocab, tokenizer.all_special_ids, bos, length=length)


def probe_length(context: int, bos: bool) -> int:
    """R, the random tokens per copy: ``PROBE_LENGTH``, or the most whose two copies (and
    the BOS) fit in ``context`` tokens. AttnReportError below 2 (no second copy to score)."""
    length = min(PROBE_LENGTH, (context - int(bos)) // 2)
    if length < 2:
        raise AttnReportError(
            f"the model's context ({context} tokens) is too short for an induction probe"
        )
    return length


def probe_scores(
    model: torch.nn.Module,
    probes: list[list[int]],
    layers: list[int] | None = None,
    family: Family | None = None,
) -> Table:
    """``probes.probe_table`` of ``probes`` (token-id lists of one length) on ``model``;
    ``layers``: its attention layers (a hybrid's model gives probabilities for those only);
    ``family``: the model's, adapted while the probes run where it reports other heads."""
    ids = torch.tensor(probes).to(input_device(model))  # (probe, token)
    adapted = family.adapted(model) if family and family.reported else nullcontext()
    with torch.no_grad(), adapted:
        out = model(input_ids=ids, output_attentions=True, use_cache=False, logits_to_keep=1)
    length = len(probes[0]) // 2  # 2R tokens, or 2R + 1 with a BOS
    offset = probe_offset(probes[0], length)
    per_probe = [[] for _ in probes]
    attentions = [a for a in out.attentions if a is not None]
    for attention in attentions:  # (probe, head, query, key), one per attention layer
        for index, probs in enumerate(host(attention).float()):
            induction = induction_scores(probs, offset, length)
            per_probe[index].append((induction, previous_token_scores(probs)))
    return probe_table(per_probe, layers)
