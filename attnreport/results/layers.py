"""Per-layer facts of the model as found when it loaded: the manifest's ``model.layers``.

One ``LayerFacts`` per decoder block (schema version 6): whether the block has attention
at all (a hybrid's Mamba, linear-attention or convolution blocks have none), how
positions enter its scores, and the features its attention call uses. Found per layer
by discovery (``attnreport.models.layout``), never assumed from a family name.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from attnreport.errors import AttnReportError
from attnreport.jsontypes import Json

POSITIONS = ("rope", "partial_rope", "alibi", "absolute", "none")


@dataclass(frozen=True)
class LayerFacts:
    """How one block attends.

    ``positions``: "rope" (every dim of each head rotated), "partial_rope" (``rotary_dims``
    of the ``head_dim`` dims rotated), "alibi" (a score bias), "absolute" (no position
    term in the layer: positions came in with the embeddings), "none" (no positions at
    all, as in SmolLM3's and Llama 4's position-free layers)."""

    layer: int
    attention: bool = True  # False: not attention (a hybrid's state-space or linear layer)
    positions: str = "none"
    rotary_dims: int = 0  # dims of each head the rotation turns; 0 where none
    window: int | None = None  # sliding window in tokens
    softcap: bool = False
    sinks: bool = False
    qk_norm: bool = False
    output_gate: bool = False
    # the block normalises the attention output before adding it (a post-attention norm)
    # and the update sizes are each head's share after that norm (version 8)
    post_norm: bool = False


def layer_facts_to_json(facts: tuple[LayerFacts, ...]) -> list[Json]:
    return [asdict(f) for f in facts]


def layer_facts_from_json(obj: Any, where: str) -> tuple[LayerFacts, ...]:
    """The manifest's ``model.layers`` (absent before version 6: empty), or a one-line error."""
    if obj is None:
        return ()
    try:
        facts = tuple(LayerFacts(**row) for row in obj)
    except TypeError as err:
        raise AttnReportError(f"{where} is malformed: model.layers ({err})") from err
    if any(f.positions not in POSITIONS for f in facts):
        raise AttnReportError(f"{where} is malformed: model.layers names an unknown position kind")
    return facts
