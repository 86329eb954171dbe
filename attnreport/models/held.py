"""A model the caller already holds: ``attnreport.analyze(model, tokenizer, ...)`` in Python.

``held_model`` makes of a model object what ``loading.load_model`` makes of a model it
loads (a ``LoadedModel``), so that everything after the load is the one pipeline: the
same self-check, capture, analyses and results. The object is taken as it is, wherever
it lives (CPU, one GPU, spread by accelerate's ``device_map``) and in its own dtype: a
fine-tuned model, one with an adapter merged or one moved to bfloat16 is analysed
without being saved. Its fingerprint is a digest of its weights as they are in memory
(``weights_fingerprint``), since no file says what they are.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import torch
from torch import nn

from attnreport.errors import AttnReportError
from attnreport.models.decoders import check_causal_decoder
from attnreport.models.families import family_for
from attnreport.models.loading import DTYPES, LoadedModel, ModelSource
from attnreport.models.placement import materialised, placement_of
from attnreport.vocabulary import PYTHON_SOURCE


def held_model(model: Any, tokenizer: Any, name: str | None = None) -> LoadedModel:
    """``model`` and ``tokenizer`` as a ``LoadedModel`` (not yet checked: the session's
    ``verified_layers`` runs the self-check). ``name``: what the report calls the model
    (default: the last part of the folder or hub id it was loaded from). One-line
    ``AttnReportError`` for an object that is not a transformers model, an encoder or
    encoder-decoder, a tokenizer that is not one, or a dtype attnreport does not analyse."""
    config = getattr(model, "config", None)
    if not isinstance(model, nn.Module) or config is None:
        raise AttnReportError(
            f"the model must be a transformers model object (a torch module with a .config), "
            f"got {type(model).__name__}; load one with AutoModelForCausalLM.from_pretrained"
        )
    check_causal_decoder(config, "the model", type(model).__name__)
    family = family_for(getattr(config, "model_type", ""))
    if not callable(tokenizer) or not hasattr(tokenizer, "decode"):
        raise AttnReportError(
            f"the tokenizer must be the model's transformers tokenizer, got "
            f"{type(tokenizer).__name__}; load it with AutoTokenizer.from_pretrained"
        )
    display = name or default_name(model)
    source = ModelSource(PYTHON_SOURCE, display, display)
    fingerprint = weights_fingerprint(model)
    return LoadedModel(
        model, tokenizer, family, source, fingerprint, dtype_of(model), device_of(model)
    )


def default_name(model: nn.Module) -> str:
    """The folder name or hub id the model was loaded from (as ``load_model`` names a
    folder or a hub model), else its class name."""
    loaded_from = str(getattr(model.config, "_name_or_path", "") or "")
    if not loaded_from:
        return type(model).__name__
    path = Path(loaded_from).expanduser()
    return path.name if path.exists() else loaded_from


def dtype_of(model: nn.Module) -> str:
    """The name of the model's dtype (that of its floating-point weights), one of ``DTYPES``."""
    dtype = getattr(model, "dtype", None)
    if dtype is None:
        dtype = next((p.dtype for p in model.parameters() if p.is_floating_point()), None)
    names = {v: k for k, v in DTYPES.items()}
    if dtype not in names:
        raise AttnReportError(
            f"the model's dtype is {str(dtype).removeprefix('torch.')}; attnreport analyses "
            f"{', '.join(DTYPES)}: convert it first, e.g. model.to(torch.float32)"
        )
    return names[dtype]


def device_of(model: nn.Module) -> str:
    """Where the model is: ``cpu``, ``cuda:0``, or how accelerate spread it
    (``device_map: cuda:0, cuda:1, cpu``), as the manifest says it."""
    if getattr(model, "hf_device_map", None):
        return placement_of(model, "device_map")
    first = next(model.parameters(), None)
    return "cpu" if first is None else str(first.device)


def weights_fingerprint(model: nn.Module) -> str:
    """``weights-sha256:HEX``: sha256 over every module's own parameters in module order
    (name, dtype, shape, then the bytes), each read where it lives (an offloaded one
    brought in by accelerate for the moment: ``materialised``), one at a time."""
    digest = hashlib.sha256()
    for module_name, module in model.named_modules():
        with materialised(module):
            for name, param in module.named_parameters(recurse=False):
                tensor = param.detach()
                head = f"{module_name}.{name} {tensor.dtype} {tuple(tensor.shape)}\n"
                digest.update(head.encode())
                data = tensor.to("cpu").contiguous().reshape(-1).view(torch.uint8)
                digest.update(data.numpy())
    return "weights-sha256:" + digest.hexdigest()
