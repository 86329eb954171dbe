"""Where a model's tensors live when it is spread over devices or offloaded by accelerate.

A model loaded with ``device_map`` (``--device-map auto|balanced``) has its blocks on
different GPUs, or offloaded to CPU memory or disk; accelerate wraps each module's
``forward`` (an instance attribute) so that its weights are brought to the module's
execution device when it runs and put back afterwards. Outside those calls an offloaded
weight is an empty ``meta`` tensor. Everything here works the same for a model on one
device (then each function is a no-op or a plain attribute read):

- ``input_device``: where the input ids must go;
- ``materialised``: a module's own weights, real, while the context is active;
- ``host``: a captured tensor moved to CPU memory (layer by layer, never the model);
- ``swapped_forward``: replace a module's ``forward`` for a while and put back exactly
  what was there (accelerate's wrapper included).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch import nn

from attnreport.jsontypes import Options

_MISSING = object()


def input_device(model: nn.Module) -> torch.device:
    """Where the model's input ids go: the input embedding's execution device.

    For an offloaded embedding that is accelerate's execution device for it (its weight is
    on ``meta`` between calls); without a usable device, the CPU (accelerate's hooks move
    inputs to each module's device themselves).
    """
    embedding = model.get_input_embeddings()
    hook = getattr(embedding, "_hf_hook", None)
    execution = getattr(hook, "execution_device", None)
    if execution is not None:
        return torch.device(execution if not isinstance(execution, int) else f"cuda:{execution}")
    device = embedding.weight.device
    return torch.device("cpu") if device.type == "meta" else device


def is_dispatched(model: nn.Module) -> bool:
    """Whether accelerate placed the model (any module carries one of its hooks)."""
    return any(hasattr(m, "_hf_hook") for m in model.modules())


@contextmanager
def materialised(module: nn.Module) -> Iterator[nn.Module]:
    """``module`` with its own parameters real (on its execution device) inside the context.

    An offloaded module's weights are loaded by accelerate's ``align_module_device`` and
    offloaded again on exit; tensors read inside stay valid after it. A plain module is
    yielded unchanged (accelerate is imported only for dispatched modules).
    """
    if getattr(module, "_hf_hook", None) is None:
        yield module
        return
    from accelerate.utils import align_module_device

    with align_module_device(module):
        yield module


def host(tensor: torch.Tensor) -> torch.Tensor:
    """``tensor`` detached, in CPU memory, same dtype (the same tensor when it is there)."""
    tensor = tensor.detach()
    return tensor if tensor.device.type == "cpu" else tensor.to("cpu")


class HostCopies:
    """``host`` with one CPU copy per source view: a mask or rotary table that every layer
    on one GPU reads is copied once, not once per layer. Keeps the sources it copied alive,
    so their addresses cannot be reused while the copies are looked up by address."""

    def __init__(self) -> None:
        self._copies: dict[tuple, tuple[torch.Tensor, torch.Tensor]] = {}

    def __call__(self, tensor: torch.Tensor | None) -> torch.Tensor | None:
        if tensor is None or tensor.device.type == "cpu":
            return None if tensor is None else tensor.detach()
        key = (tensor.device, tensor.data_ptr(), tensor.dtype, tuple(tensor.shape), tensor.stride())
        if key not in self._copies:
            self._copies[key] = (tensor, host(tensor))
        return self._copies[key][1]


@contextmanager
def swapped_forward(module: nn.Module, forward: Callable[..., Any]) -> Iterator[None]:
    """Make ``module.forward`` be ``forward`` inside the context; restore exactly what was
    there on exit: accelerate's instance-level wrapper, or nothing (the class's method)."""
    previous = vars(module).get("forward", _MISSING)
    module.forward = forward
    try:
        yield
    finally:
        if previous is _MISSING:
            vars(module).pop("forward", None)
        else:
            module.forward = previous


def map_options(device: str, device_map: str, max_memory: dict | None = None) -> Options:
    """``from_pretrained`` keyword arguments that let accelerate place the model.

    ``device_map`` is ``auto`` (fill the GPUs in order) or ``balanced`` (spread evenly);
    what does not fit goes to CPU memory, then to disk (a temporary folder under the user
    cache, removed when the process ends). ``device`` ``cpu`` keeps the model off the GPUs
    (CPU memory, then disk). ``max_memory`` ({device: bytes or "10GiB"}) overrides
    accelerate's budget per device, as in ``from_pretrained``.
    """
    if max_memory is None and device == "cpu" and torch.cuda.is_available():
        from accelerate.utils import get_max_memory

        max_memory = {"cpu": get_max_memory()["cpu"]}
    return {"device_map": device_map, "max_memory": max_memory, "offload_folder": _offload_folder()}


def _offload_folder() -> str:
    import atexit
    import shutil
    import tempfile

    from attnreport.usercache import cache_dir

    root = cache_dir() / "offload"
    root.mkdir(parents=True, exist_ok=True)
    folder = tempfile.mkdtemp(prefix="run-", dir=root)
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


def placement_of(model: nn.Module, device_map: str) -> str:
    """Where accelerate put the model, for the manifest: e.g. ``auto: cuda:0, cuda:1, cpu``."""
    placed = getattr(model, "hf_device_map", None) or {"": "cpu"}
    names = [f"cuda:{d}" if isinstance(d, int) else str(d) for d in placed.values()]
    return f"{device_map}: " + ", ".join(dict.fromkeys(names))
