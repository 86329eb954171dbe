"""Compare two runs of a study within a tolerance: the same model on another CPU, BLAS or
thread count gives the same results up to the last digits, never byte for byte.

Continuous values (scores, probabilities, magnitudes, KL, ...) must agree within
``|a - b| <= atol + rtol * max(|a|, |b|)``. Discrete statistics (a query's top key, the
ranks, the breakdown's keys, focus fractions, sorted-head order, first-token head
counts) may differ only where a near-tie explains it: the top two probabilities of the
query (or, for ranks and breakdown keys, any two scores of the row) within that same
tolerance, in either run. Such differences are listed as ``near_ties``, not problems.
A sentence without a results file keeps no tie data, nor does the capture in the other
BOS condition: there a per-sentence fraction of the set tables may move by one query's
top key, the most one near-tie moves it.

Messages name the part of the results a value is in ("sentences/003", "set",
"interventions"), not its file, whose name depends on the schema version
(``results.layout``; the runs compared may not come from files at all);
``manifest.json`` is named alike in every version.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, fields

import numpy as np

from attnreport.results.columns import Table
from attnreport.results.interventions import GridCell
from attnreport.results.io import Results
from attnreport.results.manifest import Manifest
from attnreport.results.maps import FlatTriangle, flat, triangle_index
from attnreport.results.roles import counts_query_one
from attnreport.results.ties import Ties, Tolerance, find_ties, map_tolerance

FRACTIONS = ("self_focus", "first_focus")  # statistics that count top keys


@dataclass
class Comparison:
    """What moved: ``problems`` fail a comparison, ``near_ties`` are reported only."""

    problems: list[str] = field(default_factory=list)
    near_ties: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def _scope(table: Table, s: int | None, keep: tuple[bool, bool, bool, bool]) -> list[tuple]:
    cols = table.arrays()
    n = len(table)
    parts = [
        [s] * n
        if s is not None
        else cols["sentence"].tolist()
        if "sentence" in cols
        else [None] * n,
        cols["layer"].tolist() if "layer" in cols else [None] * n,
        cols["head"].tolist() if "head" in cols else [None] * n,
        cols["query"].tolist() if "query" in cols else [None] * n,
    ]
    return [
        tuple(v if k else None for v, k in zip(r, keep, strict=True))
        for r in zip(*parts, strict=True)
    ]


@dataclass(frozen=True)
class Policy:
    """Which columns of a table a near-tie may change, and the scope of the tie."""

    which: str  # "top" (top-two ties) or "row" (any two scores of a row)
    keep: tuple[bool, bool, bool, bool]  # (sentence, layer, head, query) parts that must match
    columns: tuple[str, ...]  # columns a tie may change; () = every column
    statistic_rows: bool = False  # only rows whose ``statistic`` counts top keys
    # Rows with ``n_queries`` whose near-ties are unknown (``Ties.known``): a fraction may
    # move by one query's top key, the most one near-tie can move it.
    one_query: bool = False
    # Rows of another capture (the other BOS condition), whose scores no results file
    # keeps: no near-tie of theirs is known, and the kept files' ties are not theirs.
    other_capture: bool = False


POLICIES = {
    "top": Policy("top", (True, True, True, True), ("top_key", "top_is_self", "top_is_first")),
    "breakdown": Policy("row", (True, True, True, True), ()),
    "focus": Policy("top", (True, True, True, False), FRACTIONS),
    "focus_sorted": Policy("top", (True, True, False, False), ("head", "value", "line")),
    "block_impact": Policy("top", (True, True, False, True), ("top_first_heads",)),
    "focus_by_sentence": Policy("top", (True, True, True, False), FRACTIONS, one_query=True),
    "bos_contrast": Policy(
        "top", (True, True, True, False), FRACTIONS, one_query=True, other_capture=True
    ),
    "focus_pooled": Policy("top", (False, True, True, False), (), statistic_rows=True),
    "set_focus_sorted": Policy("top", (False, True, False, False), (), statistic_rows=False),
}


def _describe(table: Table, row: int) -> str:
    cols = table.arrays()
    keys = [
        k for k in ("sentence", "statistic", "layer", "head", "query", "rank", "line") if k in cols
    ]
    return ", ".join(f"{k} {cols[k][row]}" for k in keys)


def compare_table(
    where: str,
    a: Table,
    b: Table,
    tol: Tolerance,
    ties: Ties,
    policy: Policy | None,
    out: Comparison,
) -> None:
    """Add what differs between two versions of one table to ``out``."""
    if len(a) != len(b):
        out.problems.append(f"{where}: {len(a)} rows vs {len(b)}")
        return
    tied = np.zeros(len(a), dtype=bool)
    if policy is not None and not policy.other_capture:
        s = None if not policy.keep[0] else _sentence_of(where)
        allowed = ties.project(policy.which, policy.keep)
        tied = np.array([key in allowed for key in _scope(a, s, policy.keep)], dtype=bool)
        if policy.statistic_rows:
            tied &= np.isin(a.arrays()["statistic"], FRACTIONS)
    for f in fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        bad = ~tol.close(x, y) if x.dtype.kind == "f" else x != y
        if not bad.any():
            continue
        may_move = policy is not None and (not policy.columns or f.name in policy.columns)
        excused = bad & tied if may_move else np.zeros_like(bad)
        if may_move and policy.one_query and f.name in FRACTIONS:
            known = frozenset() if policy.other_capture else ties.known
            excused |= bad & _one_query_apart(a, x, y, tol, known)
        _report(out.near_ties, where, f.name, a, excused, x, y, "at near-ties")
        _report(out.problems, where, f.name, a, bad & ~excused, x, y, "beyond tolerance")


def _one_query_apart(
    table: Table, x: np.ndarray, y: np.ndarray, tol: Tolerance, known: frozenset[int]
) -> np.ndarray:
    """Rows of a sentence outside ``known`` (no tie data) whose fraction of ``n_queries``
    queries differs by at most one query: one top key that a near-tie moved."""
    cols = table.arrays()
    n = np.maximum(cols["n_queries"], 1).astype(np.float64)
    unknown = ~np.isin(cols["sentence"], list(known))
    return unknown & (np.abs(x - y) <= 1.0 / n + tol.atol)


def _sentence_of(where: str) -> int | None:
    name = where.split(" ")[0]
    if name.startswith("sentences/"):
        return int(name.split("/")[1].split(".")[0])
    return None


def _report(sink: list[str], where: str, column: str, table: Table, mask, x, y, how: str) -> None:
    rows = np.flatnonzero(mask)
    if len(rows):
        r = rows[0]
        sink.append(
            f"{where}.{column}: {len(rows)} value(s) differ {how}, e.g. "
            f"{_describe(table, r)}: {x[r].item()!r} vs {y[r].item()!r}"
        )


def _flat(nested: Iterable) -> np.ndarray:
    chunks: list[np.ndarray] = []
    values: list[float] = []

    def walk(node: object) -> None:
        if isinstance(node, FlatTriangle):
            chunks.append(np.asarray(values, dtype=float))
            chunks.append(node.values.astype(float))
            values.clear()
        elif isinstance(node, dict):
            for key in sorted(node):
                walk(node[key])
        elif isinstance(node, list | tuple):
            for item in node:
                walk(item)
        else:
            values.append(np.nan if node is None else float(node))  # type: ignore[arg-type]

    walk(nested)
    return np.concatenate([*chunks, np.asarray(values, dtype=float)])


def _compare_values(where: str, a: object, b: object, tol: Tolerance, out: Comparison) -> None:
    x, y = _flat(a), _flat(b)  # type: ignore[arg-type]
    if x.shape != y.shape:
        out.problems.append(f"{where}: shapes differ ({x.shape} vs {y.shape})")
    elif not tol.close(x, y).all():
        i = int(np.flatnonzero(~tol.close(x, y))[0])
        count = int((~tol.close(x, y)).sum())
        out.problems.append(
            f"{where}: {count} value(s) differ beyond tolerance, e.g. {x[i]} vs {y[i]}"
        )


def _compare_ranks(where: str, a: list, b: list, s: int, ties: Ties, out: Comparison) -> None:
    """Ranks may differ only in rows where two scores nearly tie."""
    moved, excused = [], []
    for layer, (heads_a, heads_b) in enumerate(zip(a, b, strict=True)):
        for head, (tri_a, tri_b) in enumerate(zip(heads_a, heads_b, strict=True)):
            x, y = flat(tri_a), flat(tri_b)
            if x.shape != y.shape:
                raise ValueError(f"layer {layer}, head {head}: triangles of different sizes")
            rows = triangle_index(len(tri_a))[0]
            for query in np.unique(rows[x != y]).tolist():
                tied = (s, layer, head, query) in ties.row
                (excused if tied else moved).append((layer, head, query))
    for sink, rows, how in (
        (out.near_ties, excused, "at near-ties"),
        (out.problems, moved, "beyond tolerance"),
    ):
        if rows:
            layer, head, query = rows[0]
            sink.append(
                f"{where}: ranks of {len(rows)} row(s) differ {how}, e.g. layer {layer}, "
                f"head {head}, query {query}"
            )


def _compare_manifest(a: Results, b: Results, out: Comparison) -> None:
    ma, mb = a.manifest, b.manifest
    for name in ("name", "fingerprint", "n_layers", "n_heads", "positional", "dtype"):
        if getattr(ma.model, name) != getattr(mb.model, name):
            out.problems.append(
                f"manifest.json: model {name} differs ({getattr(ma.model, name)!r} vs "
                f"{getattr(mb.model, name)!r})"
            )
    if ma.settings != mb.settings:
        out.problems.append("manifest.json: the settings differ")
    if ma.sentences != mb.sentences:
        out.problems.append("manifest.json: the sentences or their token ids differ")
    if None not in (_query_one(a), _query_one(b)) and _query_one(a) != _query_one(b):
        out.problems.append(
            "set.json: one run scored previous-token heads over queries i >= 2 (schema 9) and "
            "the other over i >= 1, query 1 included: head_roles differ by definition"
        )
    if _after_norm(ma) != _after_norm(mb):
        out.problems.append(
            "manifest.json: one run took the update sizes after the model's post-attention "
            "norm (schema 8) and the other before it: head_impact and block_impact measure "
            "different things"
        )


def _query_one(results: Results) -> bool | None:
    """Whether the run's previous-token score counts query 1 (before schema 9); None
    without head roles."""
    table = results.set.head_roles
    return None if table is None else counts_query_one(table.arrays())


def _after_norm(manifest: Manifest) -> bool:
    """Whether the run measured a post-attention norm's layers after the norm (schema 8)."""
    return any(f.post_norm for f in manifest.model.layers)


def _compare_sentence(
    a: Results, b: Results, s: int, tol: Tolerance, ties: Ties, out: Comparison
) -> None:
    sa, sb = a.sentences[s], b.sentences[s]
    where = f"sentences/{s:03d}"
    compare_table(f"{where} tokens", sa.tokens, sb.tokens, tol, ties, None, out)
    for f in fields(sa.tables):
        policy = POLICIES.get(f.name)
        x, y = getattr(sa.tables, f.name), getattr(sb.tables, f.name)
        if _both_present(f"{where} {f.name}", x, y, out):
            compare_table(f"{where} {f.name}", x, y, tol, ties, policy, out)
    if (sa.attention is None) != (sb.attention is None):
        out.problems.append(f"{where}: attention maps kept in one run only")
    elif sa.attention is not None and sb.attention is not None:
        maps = map_tolerance(tol)  # the scores are kept at SCORE_PLACES decimals
        _compare_values(
            f"{where} attention.scores", sa.attention.scores, sb.attention.scores, maps, out
        )
        _compare_values(
            f"{where} attention.probs", sa.attention.probs, sb.attention.probs, maps, out
        )
        _compare_ranks(
            f"{where} attention.ranks", sa.attention.ranks, sb.attention.ranks, s, ties, out
        )


def _compare_set(a: Results, b: Results, tol: Tolerance, ties: Ties, out: Comparison) -> None:
    for f in fields(a.set):
        key = "set_focus_sorted" if f.name == "focus_sorted" else f.name
        x, y = getattr(a.set, f.name), getattr(b.set, f.name)
        if f.name == "probes":
            if x != y:
                out.problems.append("set probes: the induction probes' token ids differ")
        elif _both_present(f"set {f.name}", x, y, out):
            compare_table(f"set {f.name}", x, y, tol, ties, POLICIES.get(key), out)


def _both_present(where: str, a: object, b: object, out: Comparison) -> bool:
    """Whether both runs have a table that older results lack (version 5's head roles);
    a table one run has and the other lacks is a problem."""
    if (a is None) != (b is None):
        out.problems.append(f"{where}: present in one run only")
    return a is not None and b is not None


def _compare_interventions(a: Results, b: Results, tol: Tolerance, out: Comparison) -> None:
    ia, ib = a.interventions, b.interventions
    if ia is None or ib is None:
        if (ia is None) != (ib is None):
            out.problems.append("interventions: present in one run only")
        return
    if (ia.layer, ia.observed_layers, ia.epsilons) != (ib.layer, ib.observed_layers, ib.epsilons):
        out.problems.append(f"interventions: layer {ia.layer} vs {ib.layer} (or its settings)")
        return
    grids = (
        ("scaling", ia.scaling.cells, ib.scaling.cells),
        ("mean", ia.mean.cells, ib.mean.cells),
        ("mean-before-rotation", ia.mean.before_rotation, ib.mean.before_rotation),
    )
    for name, cells_a, cells_b in grids:
        if [_cell_id(c) for c in cells_a] != [_cell_id(c) for c in cells_b]:
            merged = any(c.target == "QK" for c in (*cells_a, *cells_b))
            out.problems.append(f"interventions: the {name} grid has other cells" + (
                " (one run scaled Q and K apart, before schema 9; the other once, as Q or K)"
                if merged and name == "scaling" else ""))  # fmt: skip
            continue
        for k, (ca, cb) in enumerate(zip(cells_a, cells_b, strict=True)):
            where = f"interventions {name} cell {k} ({' '.join(map(str, _cell_id(ca)))})"
            _compare_values(where + " observations", ca.observations, cb.observations, tol, out)
            _compare_values(where + " kl", ca.kl, cb.kl, tol, out)
            for part in ("gaps", "moved"):
                x, y = getattr(ca, part), getattr(cb, part)
                if _both_present(f"{where} {part}", x, y, out):
                    _compare_values(f"{where} {part}", x, y, tol, out)
    _compare_values(
        "interventions scaling baseline", ia.scaling.baseline, ib.scaling.baseline, tol, out
    )
    _compare_values("interventions mean baselines", ia.mean.baselines, ib.mean.baselines, tol, out)


def compare_sentences(
    expected: Results, actual: Results, indices: Iterable[int], tol: Tolerance | None = None
) -> Comparison:
    """What ``compare_results`` compares of sentences ``indices`` (their own files), for
    two runs that share those sentences at those indices but not the rest of the set (a
    check of a few sentences of a large one): no manifest, set tables or interventions."""
    tol = tol or Tolerance()
    out = Comparison()
    ties = find_ties(expected, actual, tol)
    for s in indices:
        a, b = expected.sentences[s], actual.sentences[s]
        if (a.text, a.n_tokens) != (b.text, b.n_tokens):
            out.problems.append(f"sentences/{s:03d}: the runs analysed other sentences here")
            continue
        _compare_sentence(expected, actual, s, tol, ties, out)
    return out


def _cell_id(cell: GridCell) -> tuple:
    """What a grid cell is: its target, setting and (a scaling cell, schema 9) input."""
    return (cell.target, cell.setting) + (() if cell.sentence is None else (cell.sentence,))


def compare_results(expected: Results, actual: Results, tol: Tolerance | None = None) -> Comparison:
    """Everything that differs between two runs beyond ``tol``, and the near-ties."""
    tol = tol or Tolerance()
    out = Comparison()
    _compare_manifest(expected, actual, out)
    kept = [s.index for s in expected.sentences]
    if kept != [s.index for s in actual.sentences]:
        out.problems.append("the runs keep the results files of different sentences (pages)")
    if len(expected.sentences) != len(actual.sentences) or out.problems:
        out.problems.append("the runs are not of one study (above); nothing else compared")
        return out
    ties = find_ties(expected, actual, tol)
    for s in kept:
        _compare_sentence(expected, actual, s, tol, ties, out)
    _compare_set(expected, actual, tol, ties, out)
    _compare_interventions(expected, actual, tol, out)
    return out
