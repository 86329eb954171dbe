"""The extra passes a set needs (the BOS contrast, the value norms, the induction probes),
remembered per loaded model, so that a process which keeps its model (``serve --watch``)
runs them again only for inputs it has not seen.

The set files are rebuilt whenever any sentence changes; without this every save would
rerun these passes over every sentence. A pass's rows depend only on the model and the
token ids it ran on, so those are the key: the model object, held weakly (a reloaded model
is a new object and starts empty), and a tuple naming the pass and its ids.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import TypeVar
from weakref import WeakKeyDictionary

T = TypeVar("T")

_MEMO: WeakKeyDictionary[object, dict[Hashable, object]] = WeakKeyDictionary()


def remembered(model: object, key: Hashable, compute: Callable[[], T]) -> T:
    """``compute()`` the first time ``(model, key)`` is asked for, its stored value after."""
    table = _MEMO.setdefault(model, {})
    if key not in table:
        table[key] = compute()
    return table[key]  # type: ignore[return-value]
