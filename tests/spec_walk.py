"""Every dict inside a JSON value (a Vega or Vega-Lite spec, a figure's payload)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def walk(node: Any) -> Iterator[dict]:
    """Every dict inside ``node``, itself first, depth first."""
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from walk(value)
