"""Which models attnreport reads: causal decoders. Refuse, from the config alone (before
any weight is loaded), an encoder or an encoder-decoder, in the user's terms.

In transformers 5 only the configs of encoder families (BERT, RoBERTa, T5...) carry
``is_decoder``; it is False unless such a model was built as a decoder. An
encoder-decoder's config says so in ``is_encoder_decoder``. ``load_model`` (the CLI)
and ``models.held.held_model`` (the Python API) both ask here, so both say the same.
"""

from __future__ import annotations

from typing import Any

from attnreport.errors import AttnReportError


def check_causal_decoder(config: Any) -> None:
    """One-line ``AttnReportError`` for the config of an encoder or an encoder-decoder."""
    model_type = getattr(config, "model_type", "") or "this model"
    if getattr(config, "is_encoder_decoder", False):
        raise AttnReportError(
            f"{model_type} is an encoder-decoder model; attnreport reads causal decoders "
            "(decoder-only language models such as Llama, Qwen, Gemma or GPT-2)"
        )
    if getattr(config, "is_decoder", None) is False:
        raise AttnReportError(
            f"{model_type} is an encoder (each token attends to the whole text); attnreport "
            "reads causal decoders (decoder-only language models such as Llama, Qwen, Gemma "
            "or GPT-2)"
        )
