"""The per-layer facts a loaded model's manifest records, from its verified ``LayerSpec``s.

Pure: specs and the block count in, ``LayerFacts`` out. A block with no spec is not
attention (a hybrid's state-space, linear-attention or convolution block). Positions are
what discovery found in the layer (``LayerSpec.positions`` and the rotated width), with
"absolute" for a layer without a position term in a model that adds a learned position
table to its embeddings (GPT-2's ``wpe``, OPT's ``embed_positions``).
"""

from __future__ import annotations

from attnreport.models.layout import LayerSpec
from attnreport.results.layers import LayerFacts


def layer_facts(specs: list[LayerSpec], n_blocks: int, scheme: str) -> tuple[LayerFacts, ...]:
    """One ``LayerFacts`` per block 0..n_blocks-1; ``scheme`` is the model's
    ``positional_scheme`` ("absolute" marks its position-free layers as such)."""
    by_layer = {s.layer: s for s in specs}
    return tuple(
        _facts(by_layer[i], scheme) if i in by_layer else LayerFacts(i, attention=False)
        for i in range(n_blocks)
    )


def _positions(spec: LayerSpec, scheme: str) -> str:
    if spec.positions == "rope":
        return "partial_rope" if "partial_rotary" in spec.features else "rope"
    if spec.positions == "none" and scheme == "absolute":
        return "absolute"
    return spec.positions


def _facts(spec: LayerSpec, scheme: str) -> LayerFacts:
    return LayerFacts(
        layer=spec.layer,
        positions=_positions(spec, scheme),
        rotary_dims=spec.rotary_dims,
        window=spec.window,
        softcap="softcap" in spec.features,
        sinks="sinks" in spec.features,
        qk_norm="qk_norm" in spec.features,
        output_gate=spec.gated,
        post_norm=spec.post_norm is not None,
    )
