"""Layers numbered by block: a hybrid's attention layers among blocks that are not attention.

Every per-layer number in the results is the model's block number (``LayerSpec.layer``);
a block without attention (a hybrid's Mamba, linear-attention or convolution block) has
no ``LayerSpec``, no rows in the tables and no intervention. For a model whose every
block attends, block number and attention-layer position are the same.
"""

from __future__ import annotations

from attnreport.errors import AttnReportError
from attnreport.models.layout import LayerSpec


def attention_layers(specs: list[LayerSpec]) -> list[int]:
    """The block numbers of the attention layers, in order."""
    return [s.layer for s in specs]


def spec_at(specs: list[LayerSpec], layer: int) -> LayerSpec:
    """The ``LayerSpec`` of block ``layer``; a ``KeyError`` for a block without attention."""
    for spec in specs:
        if spec.layer == layer:
            return spec
    raise KeyError(layer)


def check_attention_layer(specs: list[LayerSpec], layer: int, n_blocks: int, what: str) -> None:
    """A one-line refusal when ``layer`` (named ``what``) is no block of the model or a
    block without attention."""
    if not 0 <= layer < n_blocks:
        raise AttnReportError(
            f"{what} {layer} is out of range: the model has layers 0-{n_blocks - 1}"
        )
    if layer not in attention_layers(specs):
        numbers = [str(i) for i in attention_layers(specs)]
        listed = " and ".join([", ".join(numbers[:-1]), numbers[-1]] if numbers[1:] else numbers)
        raise AttnReportError(
            f"{what} {layer} is not attention (a hybrid model's other block); its attention "
            f"layers are {listed}"
        )


def nearest_attention_layer(specs: list[LayerSpec], layer: int) -> int:
    """The attention layer nearest to block ``layer`` (ties go down): ``layer`` itself for
    a model whose every block attends."""
    return min(attention_layers(specs), key=lambda i: (abs(i - layer), i))
