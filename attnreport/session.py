"""A loaded model with its layer layout and tokenized sentence set: what every command starts from."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attnreport.config import Settings
from attnreport.errors import AttnReportError
from attnreport.models.held import held_model
from attnreport.models.layout import LayerSpec
from attnreport.models.loading import LoadedModel, load_model
from attnreport.sentences import Sentence, bos_added, read_sentences, tokenize_sentences
from attnreport.verification import verified_layers

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
    model loaded, then discovery and the self-check (``verified``); a model that fails the
    check is refused in one line (``AttnReportError``)."""
    return verified(load_model(model_name, dtype=dtype, device=device, device_map=device_map))


def verified(loaded: LoadedModel) -> tuple[LoadedModel, list[LayerSpec]]:
    """A model loaded (``load_verified``) or held by the caller (``held_session``) with its
    layers, found and self-checked (``verified_layers``): no path analyses a model that
    the self-check has not passed."""
    return loaded, verified_layers(loaded.family, loaded.model)


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
    return tokenized_session(loaded, specs, texts, truncate, bos, chat_template)


def held_session(
    model: object,
    tokenizer: object,
    texts: list[str],
    name: str | None = None,
    truncate: bool = False,
    bos: str = "auto",
    chat_template: bool = False,
) -> Session:
    """``open_session`` for a model object the caller holds (the Python API): the same
    self-check and tokenization; ``name`` is what the report calls it."""
    loaded, specs = verified(held_model(model, tokenizer, name))
    return tokenized_session(loaded, specs, texts, truncate, bos, chat_template)


def tokenized_session(
    loaded: LoadedModel,
    specs: list[LayerSpec],
    texts: list[str],
    truncate: bool = False,
    bos: str = "auto",
    chat_template: bool = False,
) -> Session:
    """The session of a checked model and its sentences, tokenized with the model's default
    special tokens (and ``bos``; ``chat_template``: each sentence as a user message in the
    tokenizer's chat template), each checked against its vocabulary (``check_vocabulary``)."""
    sentences = tokenize_sentences(
        texts, loaded.tokenizer, context_length(loaded), truncate, bos, chat_template
    )
    check_vocabulary(sentences, loaded)
    return Session(loaded, specs, sentences, bos)


def check_vocabulary(sentences: list[Sentence], loaded: LoadedModel) -> None:
    """One line when a token id is past the model's vocabulary: the tokenizer is not the
    model's own (its embedding would fail, or read another token's row)."""
    rows = loaded.model.get_input_embeddings().num_embeddings
    for s in sentences:
        past = [i for i in s.token_ids if not 0 <= i < rows]
        if past:
            raise AttnReportError(
                f"the tokenizer does not match the model: sentence {s.index + 1} has token id "
                f"{past[0]}, but the model's vocabulary has {rows} entries; use the model's "
                "own tokenizer"
            )


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
