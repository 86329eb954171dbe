"""The model card's per-layer rows: how each layer attends, from the manifest's ``layers``.

Pure: ``LayerFacts`` (one per block, schema version 6) in, (label, value) rows out.
Positions are grouped by kind ("rotary in all 30 layers", "partial rotary, 16 of 64 dims,
in layers 0-3; none in layer 4"); a hybrid's blocks without attention get their own
row; windows, soft-caps, sinks, QK-norm, output gates and post-attention norms get a row
where some layer has them. A folder written before version 6 has no facts and no rows.
"""

from __future__ import annotations

from collections.abc import Sequence

from attnreport.results.layers import LayerFacts
from attnreport.site.words.wording import count, index_set

KINDS = {
    "rope": "rotary",
    "partial_rope": "partial rotary",
    "alibi": "a bias added to the scores (ALiBi and alike)",
    "absolute": "absolute (learned, added to the embeddings)",
    "none": "none",
}
FLAGS = (  # (label, attribute)
    ("Soft-capped scores", "softcap"),
    ("Attention sinks", "sinks"),
    ("QK-norm", "qk_norm"),
    ("Output gate", "output_gate"),
    ("Post-attention norm", "post_norm"),  # schema 8: the update sizes are taken after it
)


def layer_rows(layers: Sequence[LayerFacts], head_dim: int) -> list[tuple[str, str]]:
    """(label, value) rows of the card for ``layers``; none when ``layers`` is empty."""
    if not layers:
        return []
    total = len(layers)
    attending = [f for f in layers if f.attention]
    rows = [("Positions by layer", _positions(attending, head_dim, total))]
    others = [f.layer for f in layers if not f.attention]
    if others:
        rows.append(("Not attention", f"{index_set(others, 'layer', total)} (no attention)"))
    windows = sorted({f.window for f in attending if f.window is not None})
    if windows:
        rows.append(("Sliding window", _windows(attending, windows, total)))
    for label, name in FLAGS:
        found = [f.layer for f in attending if getattr(f, name)]
        if found:
            rows.append((label, index_set(found, "layer", total)))
    return rows


def _positions(attending: Sequence[LayerFacts], head_dim: int, total: int) -> str:
    groups: dict[str, list[int]] = {}
    for f in attending:
        kind = KINDS[f.positions]
        if f.positions == "partial_rope":
            kind = f"{kind}, {f.rotary_dims} of {count(head_dim, 'dim')},"
        groups.setdefault(kind, []).append(f.layer)
    return "; ".join(f"{kind} in {index_set(ls, 'layer', total)}" for kind, ls in groups.items())


def _windows(attending: Sequence[LayerFacts], windows: list[int], total: int) -> str:
    parts = [
        f"{count(w, 'token')} in "
        + index_set([f.layer for f in attending if f.window == w], "layer", total)
        for w in windows
    ]
    return "; ".join(parts)
