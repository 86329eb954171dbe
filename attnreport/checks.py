"""Everything a run can check before it loads a model, without importing torch or
transformers: a bad input is one line within a second or two, not after the model loads.

``check_run`` checks, in order: the sentence file (it is read), the sentence indices the
settings name (``pages``, ``scaling_sentence``, ``mean_sentences``), each model (a named
model's package; a path that exists; a folder's ``config.json``, its architecture and its
weight and tokenizer files; a GGUF file's magic bytes; a hub id's config when it is in the
local Hugging Face cache), the device, and the output folder. The checks that need the
model itself (does layer 12 exist?) are ``study.check_settings``. The command line calls
``check_run`` first; the loader applies ``architecture_problem`` to every config it reads.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from attnreport import vocabulary as V
from attnreport.config import Settings
from attnreport.errors import AttnReportError
from attnreport.named_models import DEFAULT, NAMED, require_named
from attnreport.output import check_output, input_paths
from attnreport.page_choice import mean_inputs, page_indices, pages_note, parse_pages
from attnreport.sentences import read_sentences

log = logging.getLogger(__name__)

GGUF_MAGIC = b"GGUF"
WEIGHTS = ("*.safetensors", "*.bin", "*.safetensors.index.json", "*.bin.index.json")
TOKENIZER = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "vocab.json")
# the heads that only an encoder has (BERT's masked-word and pre-training heads)
ENCODER_HEADS = ("ForMaskedLM", "ForPreTraining", "ForNextSentencePrediction")
CAUSAL_HEADS = ("ForCausalLM", "LMHeadModel")
# device files a CUDA (or ROCm, or WSL) GPU shows on Linux
GPU_DEVICES = ("/dev/nvidiactl", "/dev/nvidia0", "/dev/kfd", "/dev/dxg")
DECODERS = "causal decoders, whose tokens attend only to those before them (Llama, GPT-2, Gemma...)"


def check_run(settings: Settings, force: bool, out: bool = True) -> int:
    """Refuse what ``settings`` get wrong that needs no model (see the module docstring);
    with ``out`` (a command that writes a study), the pages, the grids' sentences and the
    output folder too (``force``: replace a folder attnreport did not write); ``verify``
    writes none, so a project's grid choices never stop it checking another sentence
    file. Returns the number of sentences."""
    with _quiet("attnreport.sentences"):  # its warnings come when the run reads it
        count = len(read_sentences(settings.sentences))
    if out:
        check_sentence_choices(settings, count)
        check_pages(settings.pages, count)
    for name in settings.model_names():
        check_model(name)
    check_device(settings.device)
    if out:
        check_output(Path(settings.out), input_paths(settings), force)
        check_writable(Path(settings.out))
    return count


@contextlib.contextmanager
def _quiet(logger: str) -> Iterator[None]:
    quieted = logging.getLogger(logger)
    level = quieted.level
    quieted.setLevel(logging.ERROR)
    try:
        yield
    finally:
        quieted.setLevel(level)


def check_pages(pages: str, count: int) -> None:
    """``--pages`` against a set of ``count`` sentences: indices past its end are refused;
    a count past it gives every sentence a page, and says so."""
    page_indices(parse_pages(pages), count)
    note = pages_note(pages, count)
    if note:
        log.warning(note)


def scaling_sentence_indices(settings: Settings, n_sentences: int) -> tuple[int, ...]:
    """The sentences the scaling grid runs on: ``scaling_sentences``, else the first
    ``SCALING_INPUTS``; with ``scaling_sentence`` (whose maps it draws) among them."""
    chosen = settings.scaling_sentences or tuple(range(min(V.SCALING_INPUTS, n_sentences)))
    bad = [i for i in chosen if not 0 <= i < n_sentences]
    if bad:
        raise AttnReportError(
            f"scaling-grid sentence {bad[0]} does not exist (the set has {n_sentences})"
        )
    return tuple(sorted({*chosen, settings.scaling_sentence}))


def mean_sentence_indices(settings: Settings, n_sentences: int) -> tuple[int, ...]:
    """The sentences of the mean grid: ``mean_sentences``, else the first three."""
    chosen = mean_inputs(settings.mean_sentences, n_sentences)
    bad = [i for i in chosen if not 0 <= i < n_sentences]
    if bad:
        raise AttnReportError(
            f"mean-grid sentence {bad[0]} does not exist "
            f"(the set has {n_sentences}, 0-{n_sentences - 1})"
        )
    return chosen


def check_sentence_choices(settings: Settings, n_sentences: int) -> None:
    """The sentences the interventions run on exist in a set of ``n_sentences``."""
    if not 0 <= settings.scaling_sentence < n_sentences:
        raise AttnReportError(
            f"scaling sentence {settings.scaling_sentence} does not exist "
            f"(the set has {n_sentences}, 0-{n_sentences - 1})"
        )
    scaling_sentence_indices(settings, n_sentences)
    mean_sentence_indices(settings, n_sentences)


def looks_like_path(name: str) -> bool:
    """Whether ``--model NAME`` names a file or folder rather than a hub id."""
    return name.endswith(".gguf") or name.startswith(("/", "./", "../", "~")) or name.count("/") > 1


def check_model(name: str) -> None:
    """What can be known of ``--model NAME`` without loading it (see the module docstring)."""
    if name == DEFAULT:
        return  # the embedded package, else the Hub's copy: the loader decides
    if name in NAMED:
        require_named(name)
        return
    path = Path(name).expanduser()
    if path.is_file():
        check_gguf(path)
    elif path.is_dir():
        check_model_folder(path, name)
    elif looks_like_path(name):
        raise AttnReportError(f"model path {name} does not exist")
    else:
        config = cached_hub_config(name)
        problem = architecture_problem(config, name) if config is not None else None
        if problem:
            raise AttnReportError(problem)


def check_gguf(path: Path) -> None:
    """A ``.gguf`` file that starts as one (the loader dequantises it later)."""
    if path.suffix.lower() != ".gguf":
        raise AttnReportError(
            f"{path} is a file but not a .gguf model; pass a .gguf file or a directory"
        )
    with path.open("rb") as handle:
        head = handle.read(4)
    if head != GGUF_MAGIC:
        raise AttnReportError(
            f"{path} is not a GGUF file (bad magic bytes); check the path or re-download it"
        )


def check_model_folder(path: Path, name: str) -> None:
    """A model folder holds a readable ``config.json`` of a causal decoder, its weights
    and a tokenizer (what ``save_pretrained`` of a model and its tokenizer write)."""
    config_file = path / "config.json"
    if not config_file.is_file():
        ggufs = sorted(path.glob("*.gguf"))
        hint = f"; for its GGUF file, pass {ggufs[0]}" if ggufs else ""
        raise AttnReportError(
            f"model folder {name} has no config.json (save_pretrained writes one){hint}"
        )
    try:
        config = json.loads(config_file.read_bytes())
    except (OSError, ValueError) as err:
        raise AttnReportError(
            f"{config_file} is not readable JSON ({err})".splitlines()[0]
        ) from err
    if not isinstance(config, dict):
        raise AttnReportError(f"{config_file} is not a model config (a JSON object)")
    problem = architecture_problem(config, name)
    if problem:
        raise AttnReportError(problem)
    if not any(next(path.glob(pattern), None) for pattern in WEIGHTS):
        raise AttnReportError(
            f"model folder {name} has a config.json but no weights (*.safetensors or "
            "pytorch_model.bin): save the model there with save_pretrained, or download its weight files"
        )
    if not any((path / file).is_file() for file in TOKENIZER):
        raise AttnReportError(
            f"model folder {name} has no tokenizer ({', '.join(TOKENIZER)}): save the "
            "model's tokenizer beside it with save_pretrained"
        )


def architecture_problem(config: Mapping[str, Any], name: str) -> str | None:
    """Why a model whose config is ``config`` (``config.json`` as a mapping) is no causal
    decoder, in a reader's terms; None when nothing says so. An encoder-decoder says so
    (``is_encoder_decoder``, or encoder and decoder sub-configs); an encoder is a config
    with ``is_decoder`` false, or whose every architecture is an encoder's head (masked
    words, pre-training), and none a causal LM's."""
    architectures = [str(a) for a in config.get("architectures") or []]
    what = architectures[0] if architectures else f"a {config.get('model_type', 'model')!r} model"
    if config.get("is_encoder_decoder") or ("encoder" in config and "decoder" in config):
        return (
            f"{name} is {what}, an encoder-decoder (an encoder reads the input, a decoder "
            f"writes the output); attnreport reads {DECODERS}"
        )
    causal = any(a.endswith(CAUSAL_HEADS) for a in architectures)
    encoder_heads = bool(architectures) and all(a.endswith(ENCODER_HEADS) for a in architectures)
    if not causal and (
        config.get("is_decoder") is False or encoder_heads and not config.get("is_decoder")
    ):
        return (
            f"{name} is {what}, an encoder: its tokens attend to the whole text, before and "
            f"after them; attnreport reads {DECODERS}"
        )
    return None


def cached_hub_config(hub_id: str) -> dict[str, Any] | None:
    """The ``config.json`` of ``hub_id``'s main revision in the local Hugging Face cache
    (``HF_HUB_CACHE``, else ``HF_HOME/hub``, else ``~/.cache/huggingface/hub``), or None."""
    home = os.environ.get("HF_HOME") or str(Path("~/.cache/huggingface").expanduser())
    cache = Path(os.environ.get("HF_HUB_CACHE") or Path(home) / "hub")
    repo = cache / ("models--" + hub_id.replace("/", "--"))
    try:
        revision = (repo / "refs" / "main").read_text().strip()
        config = json.loads((repo / "snapshots" / revision / "config.json").read_bytes())
    except (OSError, ValueError):
        return None
    return config if isinstance(config, dict) else None


def check_device(device: str) -> None:
    """``--device cuda`` on a machine with no GPU device CUDA could use (macOS; Linux
    without an NVIDIA, ROCm or WSL GPU device file). Elsewhere torch decides, after loading."""
    if device != "cuda":
        return
    if sys.platform == "darwin":
        raise AttnReportError("--device cuda: macOS has no CUDA; use --device cpu")
    if sys.platform.startswith("linux") and not any(os.path.exists(p) for p in GPU_DEVICES):
        raise AttnReportError(
            "--device cuda: this machine has no GPU that CUDA could use (no /dev/nvidia* "
            "device); use --device cpu, or --device auto to use a GPU where there is one"
        )


def check_writable(out: Path) -> None:
    """The output folder and the folder it sits in (a site is built beside it), or the
    nearest folders above them that exist, accept new files."""
    target = out.expanduser().absolute()
    for folder in (target, target.parent):
        while not folder.exists() and folder != folder.parent:
            folder = folder.parent
        if folder.is_dir() and not os.access(folder, os.W_OK | os.X_OK):
            raise AttnReportError(
                f"cannot write the output {out}: {folder} is not writable; choose a folder you can write to"
            )
