"""A loaded model with its layer layout and tokenized sentence set: what every command starts from."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attnreport.config import Settings
from attnreport.models.layout import LayerSpec
from attnreport.models.loading import LoadedModel, load_model
from attnreport.sentences import Sentence, bos_added, read_sentences, tokenize_sentences
from attnreport.verify import verified_layers

FALLBACK_CONTEXT = 2048  # ALiBi models declare no positional limit


@dataclass(frozen=True)
class Session:
    loaded: LoadedModel
    specs: list[LayerSpec]
    sentences: list[Sentence]
    bos: str = "auto"  # --bos: auto (the tokenizer's default), always or never

    @property
    def bos_added(self) -> bool:
        """Whether every sentence starts with a BOS token."""
        return bos_added(self.sentences, self.loaded.tokenizer)

    @property
    def model(self) -> torch.nn.Module:
        return self.loaded.model

    @property
    def n_blocks(self) -> int:
        """The model's blocks, attention or not (a hybrid has more blocks than ``specs``)."""
        return int(self.loaded.model.config.num_hidden_layers)

    def token_tensors(self) -> list[torch.Tensor]:
        return [torch.tensor(s.token_ids) for s in self.sentences]


def context_length(loaded: LoadedModel) -> int:
    """The longest input the model accepts, from its config (or its tokenizer for ALiBi models)."""
    config = loaded.model.config
    declared = getattr(config, "max_position_embeddings", None) or getattr(
        config, "seq_length", None
    )
    if declared:
        return int(declared)
    tokenizer_limit = getattr(loaded.tokenizer, "model_max_length", None)
    if tokenizer_limit and tokenizer_limit < 1_000_000:
        return int(tokenizer_limit)
    return FALLBACK_CONTEXT


def load_verified(
    model_name: str, dtype: str = "float32", device: str = "cpu", device_map: str | None = None
) -> tuple[LoadedModel, list[LayerSpec]]:
    """The one checked load every command, the Ray workers and ``serve`` go through: the
    model loaded, then discovery and the self-check (``verified_layers``); a model that
    fails the check is refused in one line (``AttnReportError``)."""
    loaded = load_model(model_name, dtype=dtype, device=device, device_map=device_map)
    specs = verified_layers(loaded.family, loaded.model)
    return loaded, specs


def open_session(
    model_name: str,
    sentences_file: str | None,
    dtype: str = "float32",
    device: str = "cpu",
    truncate: bool = False,
    bos: str = "auto",
    device_map: str | None = None,
    chat_template: bool = False,
) -> Session:
    """Read the sentences first (cheap errors first), then load the model and tokenize
    (``chat_template``: each sentence as a user message in the tokenizer's chat template)."""
    texts = read_sentences(sentences_file)
    loaded, specs = load_verified(model_name, dtype, device, device_map)
    context = context_length(loaded)
    sentences = tokenize_sentences(texts, loaded.tokenizer, context, truncate, bos, chat_template)
    return Session(loaded, specs, sentences, bos)


def session_for(settings: Settings) -> Session:
    """``open_session`` with the model, sentences, dtype, device (and device map), truncation
    and BOS of ``settings``: how every command that runs the model starts."""
    return open_session(
        settings.model,
        settings.sentences,
        settings.dtype,
        settings.device,
        settings.truncate,
        settings.bos,
        settings.device_map,
        settings.chat_template,
    )
