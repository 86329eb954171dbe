"""Canonical JSON bytes of a results file: UTF-8, sorted keys, no NaN, compact
separators, one trailing newline, so the same results give the same bytes."""

from __future__ import annotations

import json
from typing import Any

from attnreport.results.columns import LazyColumn


def dump_json(value: Any) -> bytes:
    """Canonical JSON bytes of a JSON value (sorted keys, no NaN, one trailing newline)."""
    return _dumps(value) + b"\n"


def dump_json_streamed(value: Any) -> bytearray:
    """``dump_json``'s exact bytes, built piece by piece: dicts are walked here (keys sorted)
    and each ``LazyColumn`` is converted, encoded and dropped in turn, so only one column's
    Python values exist at a time."""
    out = bytearray()
    _write(value, out)
    out += b"\n"
    return out


def _dumps(value: Any) -> bytes:
    text = json.dumps(
        value, sort_keys=True, ensure_ascii=False, allow_nan=False, separators=(",", ":")
    )
    return text.encode("utf-8")


def _write(value: Any, out: bytearray) -> None:
    if isinstance(value, LazyColumn):
        out += _dumps(value.encoded())
    elif isinstance(value, dict):
        out += b"{"
        for i, key in enumerate(sorted(value)):
            out += b"," if i else b""
            out += _dumps(key) + b":"
            _write(value[key], out)
        out += b"}"
    else:
        out += _dumps(value)
