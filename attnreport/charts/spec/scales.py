"""Scales chosen from the data a figure draws, never from the model's name (issue 40).

A ratio that spans more than ``DECADES`` powers of ten on a linear scale shows its
largest values and flattens the rest onto 0 (Gemma-3's first two layers add 1-3 times
the hidden state, its others 0.01-0.3 of it): such a quantity gets a logarithmic scale,
or a symmetric-log one when it also has zeros (a log scale cannot place them). Fewer than
about ``STRIP_BELOW`` values per panel make a histogram of 1-5 values a bin: those are
drawn as points (a strip), each value in its place.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

DECADES = 2.0  # a positive quantity spanning more than this many decades is drawn on a log scale
STRIP_BELOW = 30  # per-panel values below which a distribution is a strip, not a histogram


def decades(values: Iterable[float]) -> float:
    """How many powers of ten the positive, finite ``values`` span (0 for fewer than 2)."""
    array = np.asarray(list(values) if not isinstance(values, np.ndarray) else values, float)
    positive = array[np.isfinite(array) & (array > 0)]
    if len(positive) < 2:
        return 0.0
    return float(np.log10(positive.max() / positive.min()))


def scale_type(values: Iterable[float]) -> str:
    """ "log" for non-negative ``values`` spanning more than ``DECADES`` decades, "symlog"
    when some of them are 0 (or negative), else "linear"."""
    array = np.asarray(list(values) if not isinstance(values, np.ndarray) else values, float)
    finite = array[np.isfinite(array)]
    if decades(finite) <= DECADES:
        return "linear"
    return "log" if (finite > 0).all() else "symlog"


def ratio_scale(values: Iterable[float], **options: Any) -> Any:
    """The scale of a ratio drawn from ``values``: ``scale_type``'s; a symmetric-log scale
    is linear within the smallest positive value (its ``constant``). ``options`` are the
    other scale properties (a domain, a scheme); a linear scale without any is left to the
    channel's default (``alt.Undefined``). (Altair is imported here, not with the module:
    the pages' words read its thresholds where no chart is built.)"""
    import altair as alt

    array = np.asarray(list(values) if not isinstance(values, np.ndarray) else values, float)
    kind = scale_type(array)
    if kind == "linear":
        return alt.Scale(**options) if options else alt.Undefined
    if kind == "symlog":
        positive = array[np.isfinite(array) & (array > 0)]
        options["constant"] = float(f"{positive.min():.2g}")
    return alt.Scale(type=kind, **options)


def scale_words(values: Iterable[float]) -> str:
    """What a caption says of ``ratio_scale``'s choice: "" for a linear scale."""
    kind = scale_type(values)
    if kind == "linear":
        return ""
    span = decades(values)
    kind_words = "a log scale" if kind == "log" else "a symmetric log scale (linear near 0)"
    return f" The values span {span:.1f} powers of ten, so they are drawn on {kind_words}."
