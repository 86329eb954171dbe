"""Find, generically, what capture needs from a loaded model: one ``LayerSpec`` per block.

Nothing here is written per family. One short discovery pass runs the model with
its attention routed through ``attnreport.interface`` and learns, per layer:
- the block (the ``ModuleList`` of ``num_hidden_layers`` entries) and its attention
  module (the block's one child whose class name contains ``Attention``) which must
  call the interface exactly once;
- the output projection: the attention module's child that is called after the
  function and receives exactly the function's output, or a gated output g * z
  (checked, not assumed: it must double exactly when v does);
- the q/k projection biases *as the model scores them*: the attention module is run
  once more on a zero input with an identity rotation, so q = b_q and k = b_k. With a
  QK-norm the bias is not separable (the norm is not affine in it), so the biases are
  ``None`` and the terms are taken on the normed vectors;
- how positions enter the layer (``positions``): the rotation the model applies, found
  against a rerun with an identity rotation (``attnreport.models.rotary``), none (a
  layer handed cos and sin that rotates nothing), or a score bias (ALiBi);
- the features the layer uses (GQA, QK-norm, rotary and partial rotary, soft-cap,
  sliding windows, sinks, output gate);
- a post-attention norm (``post_norm``): the block's norm child that reads exactly the
  attention module's output, kept where it is an RMSNorm whose per-head shares sum to its
  output (``attnreport.models.post_norm``).
The reruns are in ``attnreport.models.probes``. Whether the whole capture reproduces the
model is checked after discovery by ``attnreport.verification.self_check``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn

from attnreport.errors import AttnReportError
from attnreport.interface import Computed, routed
from attnreport.models.families import Family
from attnreport.models.placement import input_device, materialised
from attnreport.models.post_norm import decomposes
from attnreport.models.probes import Discovery, discovery_hooks, post_norm_hooks
from attnreport.models.rotary import Rotate, identity, inverse_for, rotated_dims, unrotate

__all__ = ["HeadLayout", "LayerSpec", "discover", "unrotate"]


@dataclass(frozen=True)
class HeadLayout:
    n_heads: int
    n_kv_heads: int
    head_dim: int
    hidden_size: int
    value_dim: int = 0  # width of v and of each head's output, when not head_dim (latent attention)

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
    rotate: Rotate | None  # the model's rotation as found to invert (rotary.inverse_for), or None
    features: frozenset[str] = field(default_factory=frozenset)
    window: int | None = None  # sliding window in tokens: key j allowed iff i - window < j <= i
    positions: str = "none"  # how positions enter this layer's scores: "rope", "alibi", "none"
    rotary_dims: int = 0  # dims of each head the rotation turns (head_dim unless partial)
    # the block's post-attention norm (Gemma, OLMo 2): what it adds is g * z / rms(z), not z
    post_norm: nn.Module | None = None

    @property
    def gated(self) -> bool:
        """Whether the output projection reads a gated output g * z (read by a hook when captured)."""
        return "output_gate" in self.features

    def out_projection(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(head, d, model) weight and (model,) bias of the output projection, in the model's
        dtype on the layer's device: u^h = context^h @ weight[h]; the bias is zeros where the
        projection has none. Views of the model's weights, or loaded from accelerate's
        offload (CPU or disk) for an offloaded layer."""
        with materialised(self.out_proj) as proj:
            return per_head_out(
                proj, self.layout.n_heads, self.layout.value_dim or self.layout.head_dim
            )

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


def find_attention(block: nn.Module, layer: int = 0) -> nn.Module | None:
    """The block's one child whose class name says ``Attention``; None for a block without
    (a hybrid's Mamba or convolution block), a one-line refusal for a block with several."""
    found = [c for c in block.children() if "Attention" in type(c).__name__]
    if len(found) > 1:  # others named after attention (Inkling 2's BlockAttentionResidual)
        found = [c for c in found if type(c).__name__.endswith("Attention")] or found
    if len(found) > 1:
        raise AttnReportError(
            f"layer {layer}: {type(block).__name__} has {len(found)} attention modules "
            "(missing: one attention module per block)"
        )
    return found[0] if found else None


def per_head_out(proj: nn.Module, n_heads: int, head_dim: int):
    """(head, d, model) weight and (model,) bias of a Linear (out, in) or Conv1D (in, out)."""
    weight = proj.weight.detach()
    w_in_out = weight.t() if isinstance(proj, nn.Linear) else weight  # (in, out)
    per_head = w_in_out.reshape(n_heads, head_dim, -1)  # (head, d, model)
    bias = proj.bias
    zeros = torch.zeros(per_head.shape[-1], dtype=weight.dtype, device=weight.device)
    return per_head, zeros if bias is None else bias.detach()


def _refuse_unsupported(model: nn.Module) -> None:
    for module in model.modules():
        if getattr(module, "reorder_and_upcast_attn", False):
            raise AttnReportError("GPT-2 variants with reorder_and_upcast_attn are not supported")


def discover(family: Family, model: nn.Module) -> list[LayerSpec]:
    """One discovery pass (4 tokens) and one ``LayerSpec`` per attention layer, or a
    one-line refusal. A block whose attention module (if any) does not call the interface
    is not attention (a hybrid's Mamba, linear-attention or convolution block) and has no
    spec; the self-check then makes sure the model's own probabilities come from exactly
    the layers found. A model with no attention layer at all is refused."""
    _refuse_unsupported(model)
    blocks = find_blocks(model)
    found = [(i, a) for i, b in enumerate(blocks) if (a := find_attention(b, i)) is not None]
    tap = Discovery()
    handles = [h for _, a in found for h in discovery_hooks(a, tap)]
    handles += [h for i, a in found for h in post_norm_hooks(blocks[i], a, tap)]
    ids = torch.arange(min(4, int(model.config.vocab_size)))[None]
    try:
        with family.adapted(model), routed(model, tap), torch.no_grad():
            model(input_ids=ids.to(input_device(model)), use_cache=False)
    finally:
        for handle in handles:
            handle.remove()
    attending = _attending(found, [m for m, _ in tap.calls], blocks)
    return [
        _layer_spec(i, family, blocks[i], attn, computed, tap)
        for (i, attn), (_, computed) in zip(attending, tap.calls, strict=True)
    ]


def _attending(found, called: list[nn.Module], blocks) -> list[tuple[int, nn.Module]]:
    """(layer, attention module) of the blocks whose attention called the interface, once
    each and in order; else a one-line refusal naming the layer."""
    attending = [(i, a) for i, a in found if any(m is a for m in called)]
    if not called:
        if "Attention" in type(blocks[0]).__name__:  # XLM: its blocks are a list of attentions
            raise AttnReportError(
                f"{type(blocks[0]).__name__}: the model's layers are bare attention modules "
                "that do not call the transformers attention interface (missing: decoder "
                "blocks with attention through AttentionInterface)"
            )
        if not found:
            raise AttnReportError(
                f"{type(blocks[0]).__name__}: no block has an attention module (missing: "
                "attention layers; state-space and recurrent models have none)"
            )
        layer, attn = found[0]
        raise AttnReportError(
            f"layer {layer}: {type(attn).__name__} does not call the transformers attention "
            "interface (missing: attention through AttentionInterface)"
        )
    if not attending:  # the modules calling it sit deeper than the blocks' children (Zamba2)
        layer = found[0][0]
        raise AttnReportError(
            f"layer {layer}: the attention interface is called by {type(called[0]).__name__}, "
            f"not by a block's own attention module (missing: one attention module per block)"
        )
    looped = [(i, a) for i, a in attending if sum(m is a for m in called) > 1]
    if looped:  # Dory, Inkling 2 Loop: a stretch of layers runs again on its own output
        layer, attn = looped[0]
        runs = sum(m is attn for m in called)
        raise AttnReportError(
            f"layer {layer}: {type(blocks[layer]).__name__} runs {runs} times in one forward "
            "pass, its layers looped (missing: layers that run once per pass)"
        )
    if [a for _, a in attending] != called:
        at = next(
            (i for (i, a), m in zip(attending, called, strict=False) if a is not m),
            attending[-1][0],
        )
        raise AttnReportError(
            f"layer {at}: {type(blocks[at]).__name__}'s attention does not call the "
            "transformers attention interface once (missing: attention through "
            "AttentionInterface, one call per layer)"
        )
    return attending


def _output_projection(layer: int, attn: nn.Module, tap: Discovery) -> tuple[nn.Module, bool]:
    """(output projection, gated): the one child reading the function's output as it is, else
    the one reading something of its size that doubles exactly when v does (an output gate
    g * z, so each head's update is W_O,h (g_h * z_h)); else a one-line refusal."""
    readers = tap.readers.get(id(attn), [])
    if len(readers) == 1:
        return readers[0], False
    linear = [
        child
        for child, seen in tap.after.get(id(attn), [])
        if (doubled := tap.doubled.get(id(child))) is not None and torch.equal(doubled, 2 * seen)
    ]
    if not readers and len(linear) == 1:
        return linear[0], True
    normed = [  # a linear child reading a norm of the output: g * z / rms(z) (BitNet)
        child
        for child, seen in tap.after.get(id(attn), [])
        for _, written in tap.normed.get(id(attn), [])
        if torch.equal(seen, written)
    ]
    if not readers and len(normed) == 1:
        return normed[0], True
    raise AttnReportError(
        f"layer {layer}: cannot identify the output projection of {type(attn).__name__} "
        f"({len(readers)} children read the attention output; missing: an output "
        "projection applied to the attention output as it is or gated)"
    )


def _rotation(layer: int, attn: nn.Module, computed: Computed, tap: Discovery, family: Family):
    """(rotate or None, position kind) of one layer: "rope" where the model's rotation changes
    q or k (found against the identity-rotation rerun), else "alibi" or "none"."""
    rotary = tap.kwargs[id(attn)]["kwargs"].get("position_embeddings")
    shifted = tap.probe.get((id(attn), "shifted"))
    if shifted is not None and not (
        torch.equal(shifted.q, computed.q) and torch.equal(shifted.k, computed.k)
    ):
        raise AttnReportError(
            f"layer {layer}: {type(attn).__name__} applies positions inside its own code "
            "(missing: position embeddings passed to the attention module)"
        )
    plain = tap.probe.get((id(attn), "plain"))
    if rotary is not None and identity(rotary) is None:
        raise AttnReportError(
            f"layer {layer}: {type(attn).__name__} is handed position embeddings that are not "
            "(cos, sin) (missing: a rotary transform attnreport can undo)"
        )
    if rotary is None or plain is None:
        return None, "alibi" if computed.score_bias is not None else "none"
    if torch.equal(plain.q, computed.q) and torch.equal(plain.k, computed.k):
        # handed cos and sin, but rotates nothing (SmolLM3's NoPE layers, ALiBi Falcons)
        return None, "alibi" if computed.score_bias is not None else "none"
    scored, unrotated = (computed.q, computed.k), (plain.q, plain.k)
    own = family.rotate  # an adapter's rotation (GPT-J's every-two pairs), or None
    return inverse_for(attn, layer, rotary, scored, unrotated, own, computed.v.dtype), "rope"


def _layer_spec(
    index, family: Family, block, attn, computed: Computed, tap: Discovery
) -> LayerSpec:
    n_heads, _, d = computed.q.shape
    own = family.output  # an adapter's composed projection (JetMoE), or None
    out_proj, gated = (own(attn), True) if own else _output_projection(index, attn, tap)
    layout = HeadLayout(
        n_heads, int(computed.k.shape[0]), d, _out_features(out_proj), int(computed.v.shape[-1])
    )
    rotate, positions = _rotation(index, attn, computed, tap, family)
    rotary = tap.kwargs[id(attn)]["kwargs"].get("position_embeddings")
    folded = getattr(out_proj, "folded", ())  # norms a composed projection's gate does
    features = _features(computed, layout, attn, rotate, rotary, tap, folded) | (
        {"output_gate"} if gated else set()
    )
    post_norm = _post_norm(attn, out_proj, tap)
    if post_norm is not None:
        features.add("post_attention_norm")
    q_bias = k_bias = None
    if "qk_norm" not in features:
        probe = tap.probe[(id(attn), "zero")]  # identity rotation: q = b_q, k = b_k
        q_bias, k_bias = probe.q[:, 0].float().cpu(), probe.k[:, 0].float().cpu()
    return LayerSpec(
        index, family, layout, block, attn, out_proj, q_bias, k_bias, rotate,
        frozenset(features), _window(computed), positions,
        rotated_dims(rotate, rotary, layout.head_dim) if rotate is not None else 0,
        post_norm,
    )  # fmt: skip


def _post_norm(attn: nn.Module, out_proj: nn.Module, tap: Discovery) -> nn.Module | None:
    """The block's one norm child that read exactly what the output projection wrote (not
    with the residual added, as BLOOM's does) and that decomposes per head
    (``post_norm.decomposes``); else None."""
    written = tap.written.get(id(out_proj))
    if written is None:
        return None
    readers = [
        (norm, read, wrote)
        for norm, read, wrote in tap.post_norms.get(id(attn), [])
        if read.shape == written.shape and torch.equal(read, written)
    ]
    if len(readers) != 1:
        return None
    norm, read, wrote = readers[0]
    return norm if decomposes(norm, read, wrote) else None


def _out_features(proj: nn.Module) -> int:
    """The hidden size a Linear (out, in) or Conv1D (in, out) writes (shapes are known even
    for an offloaded weight)."""
    shape = proj.weight.shape
    return int(shape[0] if isinstance(proj, nn.Linear) else shape[1])


def _window(computed: Computed) -> int | None:
    """The layer's sliding window as the model passed it to the attention function."""
    window = computed.sliding_window
    return None if window is None else int(window)


def _features(computed: Computed, layout: HeadLayout, attn: nn.Module, rotate, rotary, tap,
              folded=()):  # fmt: skip
    """The attention features one layer uses, as found in its discovery call. ``folded``:
    norm children of the output path, not q's or k's (DiffLlama's, in its composed gate)."""
    found = set()
    if layout.n_kv_heads < layout.n_heads:
        found.add("gqa")
    out_norms = {id(n) for n, _ in tap.normed.get(id(attn), [])}  # BitNet's, not q's or k's
    out_norms |= {id(n) for n in folded}
    if any("Norm" in type(c).__name__ and id(c) not in out_norms for c in attn.children()):
        found.add("qk_norm")
    if rotate is not None:
        found.add("rope")
        if rotated_dims(rotate, rotary, layout.head_dim) < layout.head_dim:  # NeoX, Phi, latent
            found.add("partial_rotary")
    if computed.score_bias is not None:  # with RoPE: learned biases (Doge), not positions
        found.add("score_bias" if rotate is not None else "alibi")
    if computed.softcap is not None:
        found.add("softcap")
    if computed.sliding_window is not None:
        found.add("sliding_window")
    if computed.sinks is not None:
        found.add("sinks")
    return found


def positional_scheme(specs: list[LayerSpec], model: nn.Module) -> str:
    """How positions enter the model, as found: "rope" where some layer rotates q and k,
    "alibi" where some adds a score bias, else "absolute" where the model has a position
    embedding table (GPT-2's ``wpe``, OPT's ``embed_positions``) or a sinusoidal one (XGLM),
    else "none"."""
    kinds = {s.positions for s in specs}
    for kind in ("rope", "alibi"):
        if kind in kinds:
            return kind
    tables = (
        name
        for name, module in model.named_modules()
        if (isinstance(module, nn.Embedding) or "PositionalEmbedding" in type(module).__name__)
        and ("pos" in name.rsplit(".", 1)[-1] or name.endswith("wpe"))  # XGLM's: sinusoidal
    )
    return "absolute" if next(tables, None) is not None else "none"
