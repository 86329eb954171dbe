"""The extra passes a set needs (the BOS contrast, the value norms, the induction probes),
remembered per loaded model for a process that keeps its model and rebuilds the set many
times (``serve --watch``), so that a save runs them again only for inputs not seen yet.

The set files are rebuilt whenever any sentence changes; without this every save would
rerun these passes over every sentence. A pass's rows depend only on the model and the
token ids it ran on, so those are the key: the model object, held weakly (a reloaded model
is a new object and starts empty), and a tuple naming the pass and its ids. Only a model
registered with ``keep_passes`` is remembered: a one-shot ``analyze`` of a large corpus
must not hold every sentence's rows for the life of the process.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import TypeVar
from weakref import WeakKeyDictionary

T = TypeVar("T")

_MEMO: WeakKeyDictionary[object, dict[Hashable, object]] = WeakKeyDictionary()


def keep_passes(model: object) -> None:
    """Remember the extra passes run on ``model`` from now on (until it is dropped)."""
    _MEMO.setdefault(model, {})


def remembered(model: object, key: Hashable, compute: Callable[[], T]) -> T:
    """``compute()``, stored under ``(model, key)`` when ``model`` keeps its passes, and
    the stored value when one is there."""
    table = _MEMO.get(model)
    if table is None:
        return compute()
    if key not in table:
        table[key] = compute()
    return table[key]  # type: ignore[return-value]
