"""Vega-Lite params bound to page inputs, with the names the runtime listens to.

Names are fixed: ``layer``, ``head``, ``sort_idx``, ``observation``, ``eps`` and a
window's ``positions_from`` (chunk selectors and filters refer to them in expressions), plus
``tokens`` and ``sentence_tokens``, unbound params holding token texts so that
expressions can look them up by position (``tokens[datum.query]``). Token text only
ever travels as a JSON value, never inside an expression string.
"""

from __future__ import annotations

import altair as alt

from attnreport.charts.spec import position_window

ORDINALS = ["highest", "2nd highest", "3rd highest"]


def layer_param(n_layers: int, value: int, layers: list[int] | None = None) -> alt.Parameter:
    """Layer slider 0..n_layers-1; a select of ``layers`` (block numbers) when they are not
    all of them (a hybrid: its blocks without attention have nothing to show)."""
    if layers is not None and layers != list(range(n_layers)):
        bind = alt.binding_select(options=layers, name="layer (attention layers) ")
        return alt.param(name="layer", value=value, bind=bind)
    bind = alt.binding_range(min=0, max=max(n_layers - 1, 0), step=1, name="layer ")
    return alt.param(name="layer", value=value, bind=bind)


def head_param(n_heads: int, value: int) -> alt.Parameter:
    """Head slider 0..n_heads-1."""
    bind = alt.binding_range(min=0, max=max(n_heads - 1, 0), step=1, name="head ")
    return alt.param(name="head", value=value, bind=bind)


def sort_idx_param(n_ranks: int) -> alt.Parameter:
    """Rank of the target within its row (0 = highest score), as a select."""
    options = list(range(max(n_ranks, 1)))
    labels = [ORDINALS[r] if r < len(ORDINALS) else f"rank {r}" for r in options]
    bind = alt.binding_select(options=options, labels=labels, name="target ")
    return alt.param(name="sort_idx", value=0, bind=bind)


def observation_param(observed_layers: dict[str, int]) -> alt.Parameter:
    """Where the attention is observed: the intervened layer, the next one, or the last."""
    options = ["same", "next", "last"]
    labels = [f"{name} layer ({observed_layers.get(name, '?')})" for name in options]
    bind = alt.binding_radio(options=options, labels=labels, name="observe ")
    return alt.param(name="observation", value="same", bind=bind)


def tensor_param(targets: list[str]) -> alt.Parameter:
    """The tensor an intervention grid drawn for a phone shows (one of ``targets``, "Q",
    "K", "V"), as a radio."""
    bind = alt.binding_radio(options=targets, name="tensor ")
    return alt.param(name="tensor", value=targets[0], bind=bind)


EVERY_EPSILON = "all"  # the ``eps`` option that shows every scale factor


def epsilon_param(epsilons: list[float], labels: list[str]) -> alt.Parameter:
    """The scale factor shown by the scaling grid: every one (``EVERY_EPSILON``, the
    default) or one of ``epsilons`` (the number itself, so that ``#eps=1e-3`` in the URL
    names the option 0.001), labelled with ``labels``."""
    options: list[float | str] = [EVERY_EPSILON, *epsilons]
    bind = alt.binding_select(
        options=options, labels=["every \u03b5", *labels], name="scale factor "
    )
    return alt.param(name="eps", value=EVERY_EPSILON, bind=bind)


def window_params(n_tokens: int) -> list[alt.Parameter]:
    """For an input too long to draw at once, the ``positions_from`` slider: the first
    position of the window, 0 to the last window's in steps of the window; else none."""
    if not position_window.is_windowed(n_tokens):
        return []
    size = position_window.POSITION_WINDOW
    last = position_window.last_window(n_tokens)
    bind = alt.binding_range(min=0, max=last, step=size, name="positions from ")
    return [alt.param(name=position_window.WINDOW_PARAM, value=0, bind=bind)]


def tokens_param(tokens: list[str] | dict[str, list[str]], name: str = "tokens") -> alt.Parameter:
    """An unbound param holding display token texts (a list, or lists by sentence index)."""
    return alt.param(name=name, value=tokens)
