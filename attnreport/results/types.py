"""The results of one study as typed values: the contract between analysis and rendering.

``attnreport.study`` produces a ``Results``; charts and pages read it; ``io.dump`` and
``io.load`` turn it into and out of the JSON files of ``docs/results-schema.md``. Every
``from_json`` raises ``AttnReportError`` naming the file and the missing part; every
``to_json`` gives the schema's JSON (a round trip is byte-identical after ``dump``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from functools import cache
from typing import Any, get_args, get_type_hints

from attnreport.errors import AttnReportError
from attnreport.jsontypes import Json
from attnreport.results import map_parts
from attnreport.results import tables as rt
from attnreport.results.manifest import SCHEMA, SentenceId, need
from attnreport.results.maps import AttentionMaps
from attnreport.results.roles import (
    HeadRolesBySentenceTable,
    HeadRolesSetTable,
    HeadRolesTable,
    MassiveActivationsTable,
    MassiveBySentenceTable,
    SetMassiveActivationsTable,
)


@dataclass(frozen=True, eq=False)
class SentenceTables:
    top: rt.TopTable
    breakdown: rt.BreakdownTable
    focus: rt.FocusTable
    focus_sorted: rt.FocusSortedTable
    head_impact: rt.HeadImpactTable
    block_impact: rt.BlockImpactTable
    head_roles: HeadRolesTable | None = None  # None in folders written before version 5
    massive_activations: MassiveActivationsTable | None = None


@dataclass(frozen=True, eq=False)
class SentenceResults(SentenceId):
    """One ``sentences/NNN.json``."""

    tokens: rt.TokensTable
    tables: SentenceTables
    attention: AttentionMaps | None = None  # None past ``map_tokens`` tokens
    view_head: tuple[int, int] | None = None  # the (layer, head) the user chose to open on
    # the part files its maps are read from and written to (schema 10: ``map_parts``, by
    # their idents ``sentences/NNN/lL``); None: its maps were read from the sentence file
    parts: tuple[str, ...] | None = None


@cache
def table_kinds(holder: type) -> dict[str, type[rt.Table]]:
    """Table name -> table class of one results file, from the fields of ``holder`` (its
    typed value: ``SentenceTables``, ``SetResults``) whose type is a table, in field
    order, which is the file's order. The one list of a file's tables: a new table is a
    class in ``tables`` (or ``roles``), a field here and the analysis that fills it (a
    module of ``analyses.layer_tables``); a ``tables.PooledTable`` field of ``SetResults``
    naming it is pooled over the corpus with no further code (``tests/test_table_entry.py``)."""
    hints = get_type_hints(holder)
    out = {}
    for f in fields(holder):
        kinds = [k for k in (hints[f.name], *get_args(hints[f.name])) if isinstance(k, type)]
        table = next((k for k in kinds if issubclass(k, rt.Table)), None)
        if table is not None:
            out[f.name] = table
    return out


@cache
def optional_tables(holder: type) -> frozenset[str]:
    """The tables of ``holder`` that older results lack: fields defaulting to None."""
    return frozenset(f.name for f in fields(holder) if f.default is None) & set(table_kinds(holder))


def _parse_tables(holder: type, obj: Any, where: str) -> dict[str, rt.Table]:
    tables, optional = need(obj, "tables", where), optional_tables(holder)
    return {
        name: kind.from_json(need(tables, name, where), where)
        for name, kind in table_kinds(holder).items()
        if name not in optional or name in tables
    }


def _present(holder: Any) -> list[str]:
    """The table names that ``holder`` has (an optional table may be None), in file order."""
    return [name for name in table_kinds(type(holder)) if getattr(holder, name) is not None]


def _maps_from_json(
    att: Any, where: str, n: int, parts: Mapping[str, bytes] | None
) -> AttentionMaps:
    """Version 10 keeps the scores in part files (``parts``: name in the folder -> bytes;
    errors name the folder, ``where`` up to ``sentences/``), 3 to 9 scores, sinks and rank
    fixes; 1 and 2 also stored probs and ranks."""
    if isinstance(att, dict) and "parts" in att:
        folder = where.rsplit("sentences/", 1)[0]
        try:
            return map_parts.maps_from_parts(att, parts or {}, n, folder)
        except (KeyError, ValueError, TypeError, IndexError) as err:
            raise AttnReportError(f"{where}: the attention maps are malformed ({err})") from err
    scores = need(att, "scores", where)
    try:
        if "rank_fixes" in att:
            return AttentionMaps.from_json(att)
        return AttentionMaps.from_stored(
            scores, need(att, "probs", where), need(att, "ranks", where)
        )
    except (KeyError, ValueError, TypeError, IndexError) as err:
        raise AttnReportError(f"{where}: the attention maps are malformed ({err})") from err


def sentence_from_json(
    obj: Any, where: str, parts: Mapping[str, bytes] | None = None
) -> SentenceResults:
    """A sentence file's typed value; ``parts``: the folder's files by name, where its
    maps are in part files (schema 10)."""
    info = need(obj, "sentence", where)
    att = need(obj, "attention", where)
    n = int(need(info, "n_tokens", where))
    maps = None if att is None else _maps_from_json(att, where, n, parts)
    view = obj.get("view_head")
    listed = att.get("parts") if isinstance(att, dict) else None
    return SentenceResults(
        index=int(need(info, "index", where)),
        text=str(need(info, "text", where)),
        n_tokens=n,
        tokens=rt.TokensTable.from_json(need(obj, "tokens", where), where),
        tables=SentenceTables(**_parse_tables(SentenceTables, obj, where)),
        attention=maps,
        view_head=None if view is None else (int(view[0]), int(view[1])),
        parts=None if listed is None else map_parts.listed_idents(att),
    )


def sentence_to_json(
    s: SentenceResults, lazy: bool = False, parts: Mapping[str, bytes] | None = None
) -> Json:
    """The JSON value of ``sentences/NNN.json.gz``, its scores in the part files
    ``map_parts.part_files`` writes (``parts``: those files, when already made); ``lazy``:
    table columns as ``LazyColumn``."""
    att = None if s.attention is None else map_parts.stored_maps(s.attention)
    if att is not None and parts is None:
        parts = map_parts.part_files(s.index, att, s.n_tokens)
    out: Json = {
        "schema": SCHEMA,
        "sentence": {"index": s.index, "text": s.text, "n_tokens": s.n_tokens},
        "tokens": s.tokens.to_json(),
        "attention": None if att is None else map_parts.maps_json(att, parts or {}),
        "tables": {name: getattr(s.tables, name).to_json(lazy) for name in _present(s.tables)},
    }
    if s.view_head is not None:
        out["view_head"] = list(s.view_head)
    return out


def sentence_tables_from(tables: Mapping[str, Mapping[str, Any]]) -> SentenceTables:
    """A sentence's typed tables from its tables' columns by name (``merge_layers``): every
    table field of ``SentenceTables`` that ``tables`` has (a new table is only its field)."""
    kinds = table_kinds(SentenceTables).items()
    return SentenceTables(**{name: kind(**tables[name]) for name, kind in kinds if name in tables})


def sentence_tables(s: SentenceResults) -> dict[str, rt.Table]:
    """A sentence's typed tables by their results name (those it has), in file order."""
    return {name: getattr(s.tables, name) for name in _present(s.tables)}


@dataclass(frozen=True, eq=False)
class SetResults:
    """``set.json``: focus and impact pooled over the sentences; head roles (version 5)."""

    focus_by_sentence: rt.FocusBySentenceTable
    focus_pooled: rt.FocusPooledTable
    focus_sorted: rt.PooledSortedTable
    impact_pooled: rt.ImpactPooledTable
    # (field order is ``set.json``'s table order; optional tables default to None)
    head_roles: HeadRolesSetTable | None = None
    head_roles_by_sentence: HeadRolesBySentenceTable | None = None
    massive_activations: SetMassiveActivationsTable | None = None
    bos_contrast: rt.BosContrastTable | None = None  # runs without a BOS only
    value_norms: rt.ValueNormsTable | None = None
    massive_by_sentence: MassiveBySentenceTable | None = None  # schema 9
    probes: tuple[tuple[int, ...], ...] | None = None  # the induction probes' token ids


def set_results_from(tables: Mapping[str, Mapping[str, Any]]) -> SetResults:
    """``set.json``'s typed tables from their columns by name: every table field of
    ``SetResults`` that ``tables`` has (no probes; ``study.with_roles`` adds them)."""
    kinds = table_kinds(SetResults).items()
    return SetResults(**{name: kind(**tables[name]) for name, kind in kinds if name in tables})


def pooled_kinds() -> dict[str, type[rt.PooledTable]]:
    """The set tables pooled from a sentence table by the corpus itself (``rt.PooledTable``),
    by name, in ``set.json``'s order."""
    kinds = table_kinds(SetResults).items()
    return {name: kind for name, kind in kinds if issubclass(kind, rt.PooledTable)}


def set_from_json(obj: Any, where: str = "set.json") -> SetResults:
    probes = obj.get("probes") if isinstance(obj, dict) else None
    try:
        listed = None if probes is None else tuple(tuple(int(t) for t in p) for p in probes)
    except (TypeError, ValueError) as err:
        raise AttnReportError(f"{where}: the probes are malformed ({err})") from err
    return SetResults(**_parse_tables(SetResults, obj, where), probes=listed)


def set_tables(s: SetResults) -> dict[str, rt.Table]:
    """The set's typed tables by their results name (those it has), in file order."""
    return {name: getattr(s, name) for name in _present(s)}


def set_to_json(s: SetResults) -> Json:
    tables = {n: getattr(s, n).to_json() for n in _present(s)}
    out: Json = {"schema": SCHEMA, "tables": tables}
    if s.probes is not None:
        out["probes"] = [list(p) for p in s.probes]
    return out
