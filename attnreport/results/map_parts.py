"""A sentence's attention maps in part files, one per layer: the one copy a site holds.

Since schema 10 a kept sentence's ``scores`` are not in ``sentences/NNN.json.gz`` but in
``sentences/NNN/lL.js``, one file per attention layer ``L`` (every head of it), which
``sentences/NNN.json.gz`` lists (``attention.parts``). A part file is a classic script::

    window.attnreport.register("sentences/NNN/lL", COLUMNS);

so the site's pages load it with a ``<script>`` tag (from ``file://`` as over http) and
draw the attention map from it: the page and ``attnreport render SITE/results`` read the
same file. ``COLUMNS`` are the rows the map draws, in the site's column encoding
(``results.codec`` with its packed form): ``layer``, ``head``, ``query``, ``key``,
``score`` and, for a model with sink logits, ``sink`` (the head's logit for that query),
one row per cell the model's mask lets the query see (a cell a sliding window hides has
no row), heads in order, each head's triangle row by row. The scores are kept at
``SCORE_PLACES`` decimals (the digits the map shows); the packed form gives back exactly
the floats of those decimals, in Python and in the page alike.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from attnreport.errors import AttnReportError
from attnreport.jsontypes import Json
from attnreport.results.codec import decode_array, decode_column, encode_column
from attnreport.results.maps import AttentionMaps, FlatTriangle, flat, rank_fixes, triangle_index
from attnreport.results.rounding import SCORE_PLACES, rounded_array
from attnreport.text import script_json

PREFIX = "window.attnreport.register("
SUFFIX = ");\n"
NO_SINK = -1e9  # the sink logit of a layer without sinks in a model with them: exp() is 0

Columns = dict[str, Any]  # name -> a list or a numpy array


def part_ident(index: int, layer: int) -> str:
    """What sentence ``index``'s part of ``layer`` registers itself as."""
    return f"sentences/{index:03d}/l{layer}"


def part_file(ident: str) -> str:
    """A part's file in the results folder (and, under ``results/``, in the site)."""
    return ident + ".js"


def part_idents(index: int, maps: AttentionMaps) -> tuple[str, ...]:
    """The parts of sentence ``index``'s ``maps``, in layer order."""
    return tuple(part_ident(index, layer) for layer in maps.layer_numbers)


def head_rows(maps: AttentionMaps, entry: int, head: int, n: int) -> Columns:
    """Rows ``layer, head, query, key, score[, sink]`` of one head's triangle (entry
    ``entry`` of ``maps``), masked cells left out, as numpy columns."""
    query, key, _ = triangle_index(n)
    scores = flat(maps.scores[entry][head])
    keep = np.isfinite(scores)
    count = int(keep.sum())
    rows: Columns = {
        "layer": np.full(count, maps.layer_numbers[entry], dtype=np.int64),
        "head": np.full(count, head, dtype=np.int64),
        "query": query[keep],
        "key": key[keep],
        "score": rounded_array(scores[keep], SCORE_PLACES),
    }
    if maps.sinks is not None:
        sinks = maps.sinks[entry]
        sink = np.asarray(NO_SINK if sinks is None else sinks[head], np.float64)
        rows["sink"] = np.broadcast_to(sink, (n,))[query[keep]]  # per query (Inkling 2)
    return rows


def layer_rows(maps: AttentionMaps, entry: int, n: int) -> Columns:
    """The rows of every head of entry ``entry`` of ``maps``, one head after the other."""
    heads = [head_rows(maps, entry, head, n) for head in range(len(maps.scores[entry]))]
    return {name: np.concatenate([h[name] for h in heads]) for name in (heads[0] if heads else {})}


def part_text(ident: str, columns: Columns) -> bytes:
    """A part file's bytes: a script registering ``columns`` (encoded) as ``ident``."""
    encoded = {name: encode_column(values, binary=True) for name, values in columns.items()}
    return f"{PREFIX}{script_json(ident)}, {script_json(encoded)}{SUFFIX}".encode("ascii")


def read_part_text(data: bytes, where: str) -> tuple[str, Columns]:
    """(ident, decoded columns) of a part file's bytes; a one-line error naming ``where``."""
    return _read_part(data, where, decode_column)


def read_part_arrays(data: bytes, where: str) -> tuple[str, dict[str, np.ndarray]]:
    """``read_part_text`` with every column a float64 array (no lists built)."""
    return _read_part(data, where, decode_array)


def _read_part(data: bytes, where: str, decode: Callable[[Any], Any]) -> tuple[str, Any]:
    try:
        text = data.decode("ascii")
        if not (text.startswith(PREFIX) and text.endswith(SUFFIX)):
            raise ValueError("it is not a window.attnreport.register(...) script")
        decoder = json.JSONDecoder()
        ident, end = decoder.raw_decode(text, len(PREFIX))
        if text[end : end + 2] != ", ":
            raise ValueError("no columns follow its name")
        value, end = decoder.raw_decode(text, end + 2)
        if end != len(text) - len(SUFFIX) or not isinstance(value, dict):
            raise ValueError("it does not end after its columns")
        columns = {str(name): decode(column) for name, column in value.items()}
    except (UnicodeDecodeError, ValueError) as err:
        raise AttnReportError(f"{where} is truncated or not a results part file ({err})") from err
    return str(ident), columns


def stored_maps(maps: AttentionMaps) -> AttentionMaps:
    """``maps`` with its scores at ``SCORE_PLACES`` decimals, as a part keeps them; the
    ``rank_fixes`` found again where that rounding changed a score (results of schema 8
    and older kept 6 significant digits), so the ranks read back stay the analysis'."""
    scores = [[flat(t) for t in heads] for heads in maps.scores]
    shown = [[rounded_array(s, SCORE_PLACES) for s in heads] for heads in scores]
    pairs = zip(itertools.chain(*scores), itertools.chain(*shown), strict=True)
    if all(np.array_equal(a, b, equal_nan=True) for a, b in pairs):
        return maps
    triangles = [
        [FlatTriangle(s, len(t)) for s, t in zip(heads, maps.scores[i], strict=True)]
        for i, heads in enumerate(shown)
    ]
    fixes = {}
    for entry, layer in enumerate(maps.layer_numbers):
        fixes.update(rank_fixes(layer, triangles[entry], _rank_array(maps.ranks[entry])))
    return replace(maps, scores=triangles, rank_fixes=fixes, stored_probs=None)


def _rank_array(heads: Sequence[Any]) -> np.ndarray:
    """(head, query, key) ranks of one layer's rank triangles, -1 above the diagonal."""
    n = len(heads[0]) if heads else 0
    rows, keys, _ = triangle_index(n)
    ranks = np.full((len(heads), n, n), -1, dtype=np.int64)
    for head, triangle in enumerate(heads):
        ranks[head][rows, keys] = flat(triangle).astype(np.int64)
    return ranks


def maps_json(maps: AttentionMaps, parts: Mapping[str, bytes]) -> Json:
    """The ``attention`` object of a schema-10 sentence file: what ``maps.to_json`` holds
    but the scores, and the part files that hold them (``parts``: name -> bytes), each
    with the sha256 of its bytes, so the sentence file's digest covers its maps."""
    out = maps.to_json(scores=False)
    listed = [{"file": name, "sha256": hashlib.sha256(data).hexdigest()} for name, data in parts.items()]  # fmt: skip
    return {**out, "parts": listed}


def part_files(index: int, maps: AttentionMaps, n: int) -> dict[str, bytes]:
    """Name in the results folder -> bytes of every part file of sentence ``index``, in
    layer order (``maps`` as ``stored_maps`` gives them)."""
    idents = part_idents(index, maps)
    return {part_file(i): part_text(i, layer_rows(maps, e, n)) for e, i in enumerate(idents)}


def listed_idents(att: Mapping[str, Any]) -> tuple[str, ...]:
    """The idents of the parts a schema-10 ``attention`` object lists."""
    return tuple(str(p["file"]).removesuffix(".js") for p in att["parts"])


def maps_from_parts(att: Mapping[str, Any], read: Mapping[str, bytes], n: int, where: str) -> AttentionMaps:  # fmt: skip
    """The maps of a schema-10 ``attention`` object whose part files ``read`` holds (name
    in the folder -> bytes), each checked against its listed sha256; one-line errors
    name the file (``where``: the folder, ending in "/")."""
    scores: list[list[list[list[Any]]]] = []
    for part in att["parts"]:
        name = str(part["file"])
        if name not in read:
            raise AttnReportError(f"{where}{name} is missing; run attnreport analyze again")
        data = read[name]
        if hashlib.sha256(data).hexdigest() != part["sha256"]:
            raise AttnReportError(f"{where}{name} was changed: its sha256 is not the one listed")
        ident, columns = read_part_arrays(data, where + name)
        if part_file(ident) != name:
            raise AttnReportError(f"{where}{name} registers itself as {ident!r}")
        scores.append(_layer_triangles(columns, n, where + name))
    return AttentionMaps.from_json({**att, "scores": scores})


def _layer_triangles(columns: Mapping[str, np.ndarray], n: int, where: str) -> list[FlatTriangle]:
    try:
        head = np.asarray(columns["head"], dtype=np.int64)
        cell = np.asarray(columns["query"], dtype=np.int64)
        cell = cell * (cell + 1) // 2 + np.asarray(columns["key"], dtype=np.int64)
        score = np.asarray(columns["score"], dtype=np.float64)
        cells = n * (n + 1) // 2
        heads = []
        for h in range(int(head.max(initial=-1)) + 1):
            values = np.full(cells, np.nan)
            mine = head == h
            values[cell[mine]] = score[mine]
            heads.append(FlatTriangle(values, n))
    except (KeyError, TypeError, ValueError, IndexError) as err:
        raise AttnReportError(f"{where}: its columns are malformed ({err})") from err
    return heads
