"""What a figure's caption adds for the model it draws: the sentences that define an
attention feature the model has (a registry entry's ``notes``), and the sentence naming
the layers that attend through a sliding window (``window_note``).
"""

from __future__ import annotations

from attnreport.results import Manifest
from attnreport.site.words import wording

# What an attention feature changes in a figure, said in its caption (``entry.notes``).
MAP_NOTES = (
    ("softcap", "This model soft-caps its scores (s = c tanh(s_raw / c)): the map shows the "
     "capped score, which keeps the order of the raw one."),
    ("sliding_window", "Some layers attend through a sliding window: keys outside a query's "
     "window are not allowed targets and stay blank, and first-token statistics count only "
     "the queries that can still see the first token."),
    ("sinks", "Each head also gives probability to a learned sink that is not a token, so a "
     "row's probabilities over the tokens sum to less than 1."),
)  # fmt: skip
BREAKDOWN_NOTES = (
    ("partial_rotary", "Only part of each head's dimensions is rotated (partial rotary); the "
     "position term is still the score minus the score without rotation."),
    ("qk_norm", "q and k are taken after the model's QK-norm, so the projection bias is not "
     "separable: the bias terms are 0 and content is the whole normed product."),
    ("softcap", "The terms add up to the score before the soft-cap c tanh(s / c), which keeps "
     "the order of the targets."),
)  # fmt: skip


def caption_notes(manifest: Manifest, notes: tuple[tuple[str, str], ...], shaded: bool) -> str:
    """The caption sentences (leading space each) of ``notes`` (feature, sentence) for the
    features the model has, then ``window_note`` ("(shaded)" when ``shaded``) and a
    hybrid's blocks without attention (``other_blocks.other_note``)."""
    from attnreport.charts.spec.other_blocks import other_note

    features = set(manifest.model.features)
    text = "".join(f" {sentence}" for feature, sentence in notes if feature in features)
    return text + window_note(manifest, shaded) + other_note(manifest, shaded)


def window_note(manifest: Manifest, shaded: bool = False) -> str:
    """`` Layers 0, 2 and 4 attend through a sliding window of 4 tokens ...``: which layers
    are windowed and how wide (one clause per window size), or "" without windows."""
    windows = manifest.model.layer_windows
    if not windows:
        return ""
    by_size: dict[int, list[int]] = {}
    for layer, size in sorted(windows.items()):
        by_size.setdefault(size, []).append(layer)
    n_layers = manifest.model.n_layers
    clauses = [
        f"{wording.index_set(layers, 'layer', n_layers)} {'has' if len(layers) == 1 else 'have'} "
        f"a window of {wording.count(size, 'token')}"
        for size, layers in sorted(by_size.items())
    ]
    where = " (shaded)" if shaded else ""
    longest = max((s.n_tokens for s in manifest.sentences), default=0)
    cut = (
        f" No sentence here is longer than {'the window' if len(by_size) == 1 else 'any window'} "
        f"(the longest has {wording.count(longest, 'token')}), so no window hides a token."
        if longest <= min(by_size)
        else ""
    )
    return (
        f" Sliding windows{where}: {wording.join_and(clauses)}; a query there sees only "
        f"that many latest tokens, itself included.{cut}"
    )
