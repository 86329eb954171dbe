"""Find, generically, what capture needs from a loaded model: one ``LayerSpec`` per block.

Nothing here is written per family. One short discovery pass runs the model with
its attention routed through ``attnreport.interface`` and learns, per layer:
- the block (the ``ModuleList`` of ``num_hidden_layers`` entries) and its attention
  module (the block's one child whose class name contains ``Attention``) which must
  call the interface exactly once;
- the output projection: the attention module's child that is called after the
  function and receives exactly the function's output (checked, not assumed);
- the q/k projection biases *as the model scores them*: the attention module is run
  once more on a zero input, so q = b_q and k = b_k, un-rotated with the model's own
  rotary function. With a QK-norm the bias is not separable (the norm is not affine
  in it), so the biases are ``None`` and the terms are taken on the normed vectors;
- the features the model uses (GQA, QK-norm, rotary and its width, soft-cap,
  sliding windows, sinks).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch import nn

from attnreport.errors import AttnReportError
from attnreport.interface import Computed, routed
from attnreport.models.families import Family
from attnreport.models.placement import input_device, materialised

Rotate = Callable[..., tuple[torch.Tensor, torch.Tensor]]


@dataclass(frozen=True)
class HeadLayout:
    n_heads: int
    n_kv_heads: int
    head_dim: int
    hidden_size: int

    @property
    def groups(self) -> int:
        return self.n_heads // self.n_kv_heads


@dataclass(frozen=True)
class LayerSpec:
    """Fixed per-layer facts. ``q_bias`` and ``k_bias`` are float32 CPU copies (exact: the
    model's biases upcast); the output projection is read from the model when asked for
    (``out_weight``, ``out_bias``), so a layer offloaded by accelerate stays offloaded."""

    layer: int
    family: Family
    layout: HeadLayout
    block: nn.Module
    attention: nn.Module
    out_proj: nn.Module
    q_bias: torch.Tensor | None  # (head, d); None: not separable (QK-norm)
    k_bias: torch.Tensor | None  # (kv_head, d)
    rotate: Rotate | None  # the model's apply_rotary_pos_emb, when it rotates q and k
    features: frozenset[str] = field(default_factory=frozenset)
    window: int | None = None  # sliding window in tokens: key j allowed iff i - window < j <= i

    def out_projection(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(head, d, model) weight and (model,) bias of the output projection, in the model's
        dtype on the layer's device: u^h = context^h @ weight[h]; the bias is zeros where the
        projection has none. Views of the model's weights, or loaded from accelerate's
        offload (CPU or disk) for an offloaded layer."""
        with materialised(self.out_proj) as proj:
            return per_head_out(proj, self.layout.n_heads, self.layout.head_dim)

    @property
    def out_weight(self) -> torch.Tensor:
        """(head, d, model): ``out_projection()[0]``."""
        return self.out_projection()[0]

    @property
    def out_bias(self) -> torch.Tensor:
        """(model,): ``out_projection()[1]``."""
        return self.out_projection()[1]


def find_blocks(model: nn.Module) -> list[nn.Module]:
    """The decoder blocks: the longest ``ModuleList`` with ``num_hidden_layers`` entries."""
    n = int(model.config.num_hidden_layers)
    lists = [m for m in model.modules() if isinstance(m, nn.ModuleList) and len(m) == n]
    if not lists:
        raise AttnReportError(f"cannot find the {n} decoder blocks of {type(model).__name__}")
    return list(lists[0])


def find_attention(block: nn.Module) -> nn.Module:
    found = [c for c in block.children() if "Attention" in type(c).__name__]
    if len(found) != 1:
        raise AttnReportError(f"{type(block).__name__} has no single attention module")
    return found[0]


def _is_linear(module: nn.Module) -> bool:
    return isinstance(module, nn.Linear) or type(module).__name__ == "Conv1D"


def per_head_out(proj: nn.Module, n_heads: int, head_dim: int):
    """(head, d, model) weight and (model,) bias of a Linear (out, in) or Conv1D (in, out)."""
    weight = proj.weight.detach()
    w_in_out = weight.t() if isinstance(proj, nn.Linear) else weight  # (in, out)
    per_head = w_in_out.reshape(n_heads, head_dim, -1)  # (head, d, model)
    bias = proj.bias
    zeros = torch.zeros(per_head.shape[-1], dtype=weight.dtype, device=weight.device)
    return per_head, zeros if bias is None else bias.detach()


def rotary_function(attn: nn.Module) -> Rotate:
    """The model's own ``apply_rotary_pos_emb``, from the module defining its attention."""
    fn = getattr(sys.modules[type(attn).__module__], "apply_rotary_pos_emb", None)
    if fn is None:
        raise AttnReportError(
            f"{type(attn).__name__} rotates q and k but has no apply_rotary_pos_emb to invert"
        )
    return fn


def unrotate(rotate: Rotate, q, k, cos, sin):
    """q, k (heads, n, d) before the rotation: the model's rotation run backwards.

    A rotation (possibly scaled, partial or interleaved) with (cos, sin) is undone by
    the same function with (cos, -sin) / (cos^2 + sin^2).
    """
    norm = cos * cos + sin * sin
    q_u, k_u = rotate(q[None], k[None], cos / norm, -sin / norm)
    return q_u[0], k_u[0]


class _Discovery:
    """Tap for the discovery pass: which modules call, what they pass, what reads the output."""

    def __init__(self) -> None:
        self.calls: list[tuple[nn.Module, Computed]] = []
        self.kwargs: dict[int, dict] = {}
        self.readers: dict[int, list[nn.Module]] = {}
        self.probe: dict[int, Computed] = {}
        self.probing: int | None = None

    def modify(self, module, q, k, v):
        return q, k, v

    def record(self, module, computed: Computed) -> None:
        if self.probing is not None:
            self.probe[self.probing] = computed
        else:
            self.calls.append((module, computed))


def _hooks(attn: nn.Module, tap: _Discovery) -> list:
    def on_attention(module, args, kwargs):
        tap.kwargs[id(module)] = {"args": args, "kwargs": kwargs}

    def after_attention(module, _args, _output):
        saved = tap.kwargs[id(module)]
        args, kwargs = saved["args"], dict(saved["kwargs"])
        if args:
            args = (torch.zeros_like(args[0]), *args[1:])
        else:
            kwargs["hidden_states"] = torch.zeros_like(kwargs["hidden_states"])
        tap.probing = id(module)
        try:
            module.forward(*args, **kwargs)  # hooks of the module itself do not run again
        finally:
            tap.probing = None

    def reader(child):
        def hook(_module, args):
            last = tap.calls[-1] if tap.calls and tap.probing is None else None
            if last is not None and last[0] is attn and args:
                expected = last[1].context.transpose(0, 1).reshape(-1)
                if args[0].numel() == expected.numel() and torch.equal(
                    args[0].reshape(-1), expected
                ):
                    tap.readers.setdefault(id(attn), []).append(child)

        return hook

    handles = [
        attn.register_forward_pre_hook(on_attention, with_kwargs=True),
        attn.register_forward_hook(after_attention),
    ]
    handles += [c.register_forward_pre_hook(reader(c)) for c in attn.children() if _is_linear(c)]
    return handles


def _refuse_unsupported(model: nn.Module) -> None:
    for module in model.modules():
        if getattr(module, "reorder_and_upcast_attn", False):
            raise AttnReportError("GPT-2 variants with reorder_and_upcast_attn are not supported")


def discover(family: Family, model: nn.Module) -> list[LayerSpec]:
    """One discovery pass (4 tokens) and one ``LayerSpec`` per block, or a one-line refusal."""
    _refuse_unsupported(model)
    blocks = find_blocks(model)
    attns = [find_attention(b) for b in blocks]
    tap = _Discovery()
    handles = [h for a in attns for h in _hooks(a, tap)]
    ids = torch.arange(min(4, int(model.config.vocab_size)))[None]
    try:
        with family.adapted(model), routed(model, tap), torch.no_grad():
            model(input_ids=ids.to(input_device(model)), use_cache=False)
    finally:
        for handle in handles:
            handle.remove()
    called = [m for m, _ in tap.calls]
    if called != attns:
        raise AttnReportError(
            f"{type(model).__name__}'s attention does not route through the transformers "
            "attention interface once per block; it cannot be captured"
        )
    return [
        _layer_spec(i, family, blocks[i], attns[i], computed, tap)
        for i, (_, computed) in enumerate(tap.calls)
    ]


def _layer_spec(index, family, block, attn, computed: Computed, tap: _Discovery) -> LayerSpec:
    n_heads, _, d = computed.q.shape
    readers = tap.readers.get(id(attn), [])
    if len(readers) != 1:
        raise AttnReportError(
            f"cannot identify the output projection of {type(attn).__name__} "
            f"({len(readers)} children read the attention output)"
        )
    layout = HeadLayout(n_heads, int(computed.k.shape[0]), d, _out_features(readers[0]))
    kwargs = tap.kwargs[id(attn)]["kwargs"]
    rotary = kwargs.get("position_embeddings")
    rotate = rotary_function(attn) if rotary is not None else None
    features = _features(computed, layout, attn, rotary)
    q_bias = k_bias = None
    if "qk_norm" not in features:
        probe = tap.probe[id(attn)]
        q0, k0 = probe.q, probe.k
        if rotate is not None:
            q0, k0 = unrotate(rotate, q0, k0, *rotary)
        q_bias, k_bias = q0[:, 0].float().cpu(), k0[:, 0].float().cpu()
    return LayerSpec(
        index, family, layout, block, attn, readers[0], q_bias, k_bias, rotate,
        frozenset(features), _window(computed),
    )  # fmt: skip


def _out_features(proj: nn.Module) -> int:
    """The hidden size a Linear (out, in) or Conv1D (in, out) writes (shapes are known even
    for an offloaded weight)."""
    shape = proj.weight.shape
    return int(shape[0] if isinstance(proj, nn.Linear) else shape[1])


def _window(computed: Computed) -> int | None:
    """The layer's sliding window as the model passed it to the attention function."""
    window = computed.sliding_window
    return None if window is None else int(window)


def _partially_rotated(attn: nn.Module, rotary, layout: HeadLayout) -> bool:
    """Whether some head dims are left unrotated at every position (GPT-NeoX, Phi)."""
    cos, sin = rotary
    x = torch.randn(1, 1, cos.shape[-2], layout.head_dim, dtype=cos.dtype, device=cos.device)
    y, _ = rotary_function(attn)(x, x, cos, sin)
    return bool(torch.all(y[..., 1:, :] == x[..., 1:, :], dim=-2).any())


def _features(computed: Computed, layout: HeadLayout, attn: nn.Module, rotary) -> set[str]:
    found = set()
    if layout.n_kv_heads < layout.n_heads:
        found.add("gqa")
    if any("Norm" in type(c).__name__ for c in attn.children()):
        found.add("qk_norm")
    if rotary is not None:
        found.add("rope")
        if _partially_rotated(attn, rotary, layout):
            found.add("partial_rotary")
    if computed.score_bias is not None:
        found.add("alibi")
    if computed.softcap is not None:
        found.add("softcap")
    if computed.sliding_window is not None:
        found.add("sliding_window")
    if computed.sinks is not None:
        found.add("sinks")
    return found
