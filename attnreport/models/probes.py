"""The discovery pass's tap: which modules call the interface, with what, and reruns of each.

While the discovery pass runs, each attention module's own ``forward`` is run again
right after its call (its hooks do not run twice), with the same arguments but:
- ``zero``: a zero input and an identity rotation, so q = b_q and k = b_k as the model
  scores them (its projection biases, through whatever else the module does);
- ``plain``: the real input and an identity rotation (cos = 1, sin = 0): q and k as
  scored but for the rotation, what the rotation's inverse must give back;
- ``shifted``: without ``position_embeddings``, every position id plus one: a module
  that computes a rotation of its own changes q or k under it;
- ``doubled``: only where no child reads the function's output as it is, v doubled: a
  child that reads a gated output (Qwen3-Next, AFMoE: g * z) reads exactly twice as much.
The children of the module that read exactly the function's output are recorded (the
output projection), and those that read something of its size after it (``after``); so
are its norm children that read exactly the function's output, with what they write
(``normed``: BitNet's RMSNorm of z before ``o_proj``, a per-token gate g * z / rms(z)).
The attention's linear children record what they wrote (``written``), and the block's own
norm children what they read and wrote (``post_norms``): the one that read exactly what the
output projection wrote is a post-attention norm, Gemma's and OLMo 2's, which
``attnreport.models.post_norm`` decomposes per head.
"""

from __future__ import annotations

import torch
from torch import nn

from attnreport.interface import Computed
from attnreport.models.rotary import identity


class Discovery:
    """Receives the interface calls of the discovery pass (``attnreport.interface.Tap``)."""

    leading_rows = 0  # the discovery pass is dense: no blockwise probabilities to keep

    def __init__(self) -> None:
        self.calls: list[tuple[nn.Module, Computed]] = []
        self.kwargs: dict[int, dict] = {}
        self.readers: dict[int, list[nn.Module]] = {}
        self.probe: dict[tuple[int, str], Computed] = {}
        self.probing: tuple[int, str] | None = None
        self.after: dict[int, list[tuple[nn.Module, torch.Tensor]]] = {}
        self.doubled: dict[int, torch.Tensor] = {}  # id(child) -> its input with v doubled
        self.normed: dict[int, list[tuple[nn.Module, torch.Tensor]]] = {}  # norm, its output
        self.written: dict[int, torch.Tensor] = {}  # id(linear child) -> what it wrote
        # id(attention) -> [(a norm child of its block, what it read, what it wrote)]
        self.post_norms: dict[int, list[tuple[nn.Module, torch.Tensor, torch.Tensor]]] = {}

    def modify(self, module, q, k, v):
        if self.probing is not None and self.probing[1] == "doubled":
            return q, k, 2 * v
        return q, k, v

    def record(self, module, computed: Computed) -> None:
        if self.probing is not None:
            self.probe[self.probing] = computed
        else:
            self.calls.append((module, computed))

    def rerun(self, module: nn.Module, kind: str, zero: bool, **changed) -> None:
        """Run ``module.forward`` again with its saved arguments, ``changed`` kwargs, and a
        zero input if ``zero``; what the interface computes is kept as ``probe[id, kind]``."""
        saved = self.kwargs[id(module)]
        args, kwargs = saved["args"], {**saved["kwargs"], **changed}
        if zero and args:
            args = (torch.zeros_like(args[0]), *args[1:])
        elif zero:
            kwargs["hidden_states"] = torch.zeros_like(kwargs["hidden_states"])
        self.probing = (id(module), kind)
        try:
            module.forward(*args, **kwargs)
        finally:
            self.probing = None


def _after_attention(tap: Discovery):
    def hook(module, _args, _output):
        kwargs = tap.kwargs[id(module)]["kwargs"]
        rotary = kwargs.get("position_embeddings")
        if rotary is not None and identity(rotary) is None:
            return  # not (cos, sin): discovery refuses the layer
        plain = {} if rotary is None else {"position_embeddings": identity(rotary)}
        tap.rerun(module, "zero", True, **plain)
        if rotary is not None:
            tap.rerun(module, "plain", False, **plain)
        elif isinstance(kwargs.get("position_ids"), torch.Tensor):
            tap.rerun(module, "shifted", False, position_ids=kwargs["position_ids"] + 1)
        if id(module) not in tap.readers and tap.after.get(id(module)):
            tap.rerun(module, "doubled", False)

    return hook


def _is_linear(module: nn.Module) -> bool:
    return isinstance(module, nn.Linear) or type(module).__name__ == "Conv1D"


def _linear_children(attn: nn.Module) -> list[nn.Module]:
    """The attention module's linear maps: its linear children and those of its other
    children, one level down, where a child wraps the projections: GPT-Neo's attention
    wraps the module that has them all, Inkling 2's ``o_proj`` (transformers 5.24) its
    output gate and the linear map that reads the gated output."""
    direct = [c for c in attn.children() if _is_linear(c)]
    wrapped = [c for child in attn.children() if not _is_linear(child)
               for c in child.children() if _is_linear(c)]  # fmt: skip
    return direct + wrapped


def _reader(tap: Discovery, attn: nn.Module, child: nn.Module):
    def hook(_module, args):
        if tap.probing == (id(attn), "doubled") and args:
            tap.doubled[id(child)] = args[0]
        last = tap.calls[-1] if tap.calls and tap.probing is None else None
        if last is not None and last[0] is attn and args:
            expected = last[1].context.transpose(0, 1).reshape(-1)
            if args[0].numel() != expected.numel():
                return
            if torch.equal(args[0].reshape(-1), expected):
                tap.readers.setdefault(id(attn), []).append(child)
            else:
                tap.after.setdefault(id(attn), []).append((child, args[0]))

    return hook


def _norm_reader(tap: Discovery, attn: nn.Module):
    """A forward hook recording a norm child that reads exactly the function's output."""

    def hook(norm, args, output):
        last = tap.calls[-1] if tap.calls and tap.probing is None else None
        if last is None or last[0] is not attn or not args:
            return
        expected = last[1].context.transpose(0, 1).reshape(-1)
        if args[0].numel() == expected.numel() and torch.equal(args[0].reshape(-1), expected):
            tap.normed.setdefault(id(attn), []).append((norm, output))

    return hook


def _post_norm_reader(tap: Discovery, attn: nn.Module):
    """A forward hook recording what a norm child of ``attn``'s block read and wrote
    (``models.layout`` keeps the one that read the output projection's output)."""

    def hook(norm, args, output):
        read = args[0] if args else None
        tensors = isinstance(read, torch.Tensor) and isinstance(output, torch.Tensor)
        if tap.probing is None and tensors:
            tap.post_norms.setdefault(id(attn), []).append((norm, read, output))

    return hook


def post_norm_hooks(block: nn.Module, attn: nn.Module, tap: Discovery) -> list:
    """Hook handles (to remove) that record what the block's norm children read and wrote."""
    norms = [c for c in block.children() if c is not attn and "Norm" in type(c).__name__]
    return [n.register_forward_hook(_post_norm_reader(tap, attn)) for n in norms]


def discovery_hooks(attn: nn.Module, tap: Discovery) -> list:
    """Hook handles (to remove) that fill ``tap`` for one attention module."""

    def on_attention(module, args, kwargs):
        tap.kwargs[id(module)] = {"args": args, "kwargs": kwargs}

    handles = [
        attn.register_forward_pre_hook(on_attention, with_kwargs=True),
        attn.register_forward_hook(_after_attention(tap)),
    ]
    children = _linear_children(attn)
    norms = [c for c in attn.children() if "Norm" in type(c).__name__]

    def on_written(child, _args, output):
        if tap.probing is None and isinstance(output, torch.Tensor):
            tap.written[id(child)] = output

    return (
        handles
        + [c.register_forward_pre_hook(_reader(tap, attn, c)) for c in children]
        + [c.register_forward_hook(on_written) for c in children]
        + [n.register_forward_hook(_norm_reader(tap, attn)) for n in norms]
    )
