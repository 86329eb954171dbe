"""Alt text of the evidence figures beside the claims and of the massive activations,
computed from the same numbers the claims and findings state (``alt_text`` holds the
other figures')."""

from __future__ import annotations

from attnreport.site.words.alt_text import AltData
from attnreport.site.words.claims import ClaimInputs
from attnreport.site.words.claims.blog import FIRST_LAYER, sink_heads_change_little
from attnreport.site.words.claims.streaming import sink_on_any_first_token
from attnreport.site.words.claims.values import sink_values_small
from attnreport.site.words.findings import massive_activations


def _numbers(claim) -> str:
    return f" {claim.numbers[0].upper()}{claim.numbers[1:]}." if claim and claim.numbers else ""


def split_updates(data: AltData) -> str:
    claim = sink_heads_change_little(ClaimInputs(data.set_tables))
    return (
        "Line chart against layer, two lines with bands: the median update size where a "
        "head's top key is the first token and where it is another token, on a log scale; "
        f"layers before {FIRST_LAYER} are shaded, outside the source blog's scope."
    ) + _numbers(claim)


def first_token_bos(data: AltData) -> str:
    claim = sink_on_any_first_token(ClaimInputs(data.set_tables))
    return (
        "Line chart against layer, two lines with bands: the first token's mean attention "
        "probability with the BOS token first and with the sentence's own first token first, "
        "and a dashed line for uniform attention."
    ) + _numbers(claim)


def value_norms(data: AltData) -> str:
    claim = sink_values_small(ClaimInputs(data.set_tables))
    return (
        "Line chart against layer on a log scale: the first token's value norm over the "
        "other tokens' mean, sink layers and the other layers in two colours, a dashed line "
        "at 1."
    ) + _numbers(claim)


def massive(data: AltData) -> str:
    found = massive_activations(data.set_tables)
    return (
        "Line chart against layer on a log scale: the largest residual activation over the "
        "layer's median, coloured by whether it sits on the first token in every sentence."
    ) + (f" {found.text}" if found else "")
