"""Why the interventions run in the layer they run in, in one sentence a page prints.

The rule is ``analyses.layer_choice``'s: the ``intervene_layer`` setting, else the layer
nearest ``intervene_depth`` (a comparison records it for every model after the first,
beside the layer it chose), else the layer with the strongest pooled first-token focus.
The sentence states the rule the manifest shows was applied and the number behind it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from attnreport.analyses.layer_choice import (
    depth,
    first_focus_by_layer,
    strongest_first_token_layer,
)
from attnreport.results import Manifest
from attnreport.site.words.wording import count
from attnreport.site.words.wording import percent as pct


def layer_reason(manifest: Manifest, pooled: Mapping[str, Any] | None, layer: int) -> str:
    """``The interventions run in layer 24, ...`` for results whose interventions ran in
    ``layer``; ``pooled``: the set's ``focus_pooled`` columns (None: not at hand)."""
    settings, n_layers = manifest.settings, manifest.model.n_layers
    start = f"The interventions run in layer {layer}"
    if settings.intervene_depth is not None:
        start += (
            f", at relative depth {depth(layer, n_layers):.2f} (0: the first layer, 1: the last)"
        )
        if settings.intervene_layer is not None:  # set by a comparison, beside the depth
            return (
                f"{start}: the comparison runs each model's interventions at matched depths, "
                f"and layer {layer} is the one nearest {settings.intervene_depth:.2f}, the "
                "depth of the first model's intervention layer."
            )
        return (
            f"{start}, the attention layer nearest the depth {settings.intervene_depth:g} "
            "that the intervene_depth setting asks for."
        )
    # a manifest without a vocabulary size was written before schema 9, which did not
    # record a comparison's matched depth beside the layer it chose
    if settings.intervene_layer is not None and not manifest.model.vocab_size:
        return (
            f"{start}, the layer the analysis recorded as its intervene_layer setting "
            "(results before schema 9 do not say whether a person chose it or a comparison "
            "matched it to its first model's depth)."
        )
    if settings.intervene_layer is not None:
        return f"{start}, the layer the intervene_layer setting names."
    means = first_focus_by_layer(pooled) if pooled else {}
    if not means or strongest_first_token_layer(pooled) != layer:
        return f"{start}."
    return (
        f"{start}, by the default rule: of the model's {count(len(means), 'attention layer')}, "
        "the one whose heads most often make the first token their top key, pooled over the "
        f"set (here {pct(means[layer])} of the queries, averaged over its heads)."
    )
