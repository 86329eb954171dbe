"""Alt text of the evidence figures beside the claims and of the massive activations,
computed from the same numbers the claims and findings state (``alt_text`` holds the
other figures')."""

from __future__ import annotations

from collections.abc import Callable

from attnreport.site.words.alt_text import AltData
from attnreport.site.words.claims import Claim, ClaimInputs
from attnreport.site.words.claims.blog import FIRST_LAYER, sink_heads_change_little
from attnreport.site.words.claims.streaming import sink_on_any_first_token
from attnreport.site.words.claims.values import sink_values_small
from attnreport.site.words.findings import massive_activations


def _with_claim(
    drawn: str, test: Callable[[ClaimInputs], Claim | None]
) -> Callable[[AltData], str]:
    """The alt text of a figure a claim is judged on: what is ``drawn``, then the claim's
    numbers (its median effect and interval) when it could be tested."""

    def alt(data: AltData) -> str:
        claim = test(ClaimInputs(data.set_tables))
        said = claim.numbers if claim is not None else ""
        return drawn + (f" {said[0].upper()}{said[1:]}." if said else "")

    return alt


split_updates = _with_claim(
    "Line chart against layer, two lines with bands: the median update size where a head's "
    "top key is the first token and where it is another token, on a log scale; layers "
    f"before {FIRST_LAYER} are shaded, outside the source blog's scope.",
    sink_heads_change_little,
)
first_token_bos = _with_claim(
    "Line chart against layer, two lines with bands: the first token's mean attention "
    "probability with the BOS token first and with the sentence's own first token first, "
    "and a dashed line for uniform attention.",
    sink_on_any_first_token,
)
value_norms = _with_claim(
    "Points against layer on a log scale: the first token's value norm over the other "
    "tokens' mean, sink layers and the other layers in two colours, a dashed line at 1.",
    sink_values_small,
)


def massive(data: AltData) -> str:
    found = massive_activations(data.set_tables)
    each = " in every sentence" if data.set_tables.get("massive_by_sentence") else ""
    return (
        "Points against layer on a log scale: the largest residual activation over the "
        f"layer's median, coloured by whether it sits on the first token{each}."
    ) + (f" {found.text}" if found else "")
