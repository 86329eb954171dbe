"""The results of one study as typed values: the contract between analysis and rendering.

``attnreport.study`` produces a ``Results``; charts and pages read it; ``io.dump`` and
``io.load`` turn it into and out of the JSON files of ``docs/results-schema.md``. Every
``from_json`` raises ``AttnReportError`` naming the file and the missing part; every
``to_json`` gives the schema's JSON (a round trip is byte-identical after ``dump``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from functools import cache
from typing import Any, get_args, get_type_hints

from attnreport import vocabulary as V
from attnreport.errors import AttnReportError
from attnreport.results import tables as rt
from attnreport.results.layers import LayerFacts, layer_facts_from_json, layer_facts_to_json
from attnreport.results.maps import AttentionMaps
from attnreport.results.roles import (
    HeadRolesBySentenceTable,
    HeadRolesSetTable,
    HeadRolesTable,
    MassiveActivationsTable,
    SetMassiveActivationsTable,
)

SCHEMA_VERSION = 7
SCHEMA = f"attnreport.results/{SCHEMA_VERSION}"
# version 1 lacks manifest.files and the optional columns; versions 1 and 2 store the
# attention probs and ranks (3 derives them) and write table columns as plain arrays;
# versions 1 to 3 write plain .json files, 4 gzip-compresses them (``layout``); 5 adds
# the head-role tables and the probes (``optional_tables``), the BOS contrast, the value
# norms and the mean grid's cells taken before the rotary rotation, which older folders lack;
# 6 adds the per-layer facts (``model.layers``: positions, windows, soft-caps, sinks, QK-norm);
# 7 pools a long sentence's per-query tables past ``map_tokens`` (``pooling``: ``span``)
READABLE_VERSIONS = (1, 2, 3, 4, 5, 6, 7)

Triangle = list[list[float | int | None]]  # tri[i] holds keys 0..i of query row i
Observations = dict[str, list[Triangle]]  # "same"/"next"/"last" -> [head] -> triangle


def need(obj: Any, key: str, where: str) -> Any:
    """``obj[key]``, or a one-line error naming the file and the missing key."""
    if not isinstance(obj, dict) or key not in obj:
        raise AttnReportError(f"{where} is incomplete: it has no {key!r}")
    return obj[key]


@dataclass(frozen=True)
class ModelInfo:
    """What the manifest says about the model (``extra`` keeps keys this version ignores)."""

    name: str
    source: str
    fingerprint: str
    model_type: str
    family: str
    positional: str  # "rope", "alibi", "absolute", ...
    n_layers: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    hidden_size: int
    context: int | None
    attn_implementation: str
    dtype: str
    device: str
    tokenizer: str
    features: tuple[str, ...] = ()  # attention features the model uses (sinks, window, ...)
    # layer -> sliding window in tokens, for the layers that attend through one
    layer_windows: dict[int, int] = field(default_factory=dict)
    layers: tuple[LayerFacts, ...] = ()  # one per block, as found at load (version 6)
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class StudySettings:
    """The settings that changed the numbers, as recorded in the manifest."""

    breakdown_ranks: int = V.BREAKDOWN_RANKS
    epsilons: tuple[float, ...] = V.EPSILONS
    intervene_layer: int | None = None
    scaling_sentence: int = 0
    mean_sentences: tuple[int, ...] | None = None
    map_tokens: int = V.MAP_TOKENS
    view_head: tuple[int, ...] | None = None
    bos: str = V.BOS_DEFAULT  # one of vocabulary.BOS
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ListedSentence:
    index: int
    text: str
    n_tokens: int
    token_ids: tuple[int, ...]


@dataclass(frozen=True)
class Manifest:
    attnreport_version: str
    model: ModelInfo
    settings: StudySettings
    sentences: tuple[ListedSentence, ...]
    files: dict[str, int] | None = None  # every other file -> its size in bytes (v2)
    analysed: str | None = None  # ISO day of the analysis (``dates.analysis_date``; v5)


def _tuple_or_none(value: Any) -> tuple[Any, ...] | None:
    return None if value is None else tuple(value)


def _known(cls: type, obj: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    names = {f.name for f in fields(cls)} - {"extra"}
    return {k: v for k, v in obj.items() if k in names}, {
        k: v for k, v in obj.items() if k not in names
    }


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _with_extra(obj: Any) -> dict[str, Any]:
    out = {f.name: _plain(getattr(obj, f.name)) for f in fields(obj) if f.name != "extra"}
    return {**obj.extra, **out}


def _model_json(model: ModelInfo) -> dict[str, Any]:
    """The manifest's model object; ``layers`` only where found (folders written before
    version 6 round-trip without it)."""
    out = _with_extra(model)
    if model.layers:
        out["layers"] = layer_facts_to_json(model.layers)
    else:
        out.pop("layers")
    return out


def model_from_json(obj: Any, where: str) -> ModelInfo:
    if not isinstance(obj, dict):
        raise AttnReportError(f"{where} is incomplete: its model is not an object")
    known, extra = _known(ModelInfo, obj)
    missing = [
        f.name
        for f in fields(ModelInfo)
        if f.name not in known and f.name not in ("features", "layer_windows", "layers", "extra")
    ]
    if missing:
        raise AttnReportError(f"{where} is incomplete: model has no {missing[0]!r}")
    known["features"] = tuple(known.get("features", ()))
    windows = known.get("layer_windows", {})
    if not isinstance(windows, dict):
        raise AttnReportError(f"{where} is malformed: model.layer_windows is not an object")
    known["layer_windows"] = {int(layer): int(w) for layer, w in windows.items()}
    known["layers"] = layer_facts_from_json(known.get("layers"), where)
    return ModelInfo(**known, extra=extra)


def settings_from_json(obj: Any) -> StudySettings:
    known, extra = _known(StudySettings, obj or {})
    for name in ("epsilons", "mean_sentences", "view_head"):
        if name in known:
            known[name] = _tuple_or_none(known[name])
    return StudySettings(**known, extra=extra)


def manifest_from_json(obj: Any, where: str = "manifest.json") -> Manifest:
    listed = tuple(
        ListedSentence(
            int(need(s, "index", where)),
            str(need(s, "text", where)),
            int(need(s, "n_tokens", where)),
            tuple(int(t) for t in need(s, "token_ids", where)),
        )
        for s in need(obj, "sentences", where)
    )
    files = obj.get("files")
    return Manifest(
        attnreport_version=str(need(obj, "attnreport_version", where)),
        model=model_from_json(need(obj, "model", where), where),
        settings=settings_from_json(obj.get("settings")),
        sentences=listed,
        files=None if files is None else {str(k): int(v) for k, v in files.items()},
        analysed=None if obj.get("analysed") is None else str(obj["analysed"]),
    )


def manifest_to_json(manifest: Manifest) -> dict[str, Any]:
    out = {
        "schema": SCHEMA,
        "attnreport_version": manifest.attnreport_version,
        "model": _model_json(manifest.model),
        "settings": _with_extra(manifest.settings),
        "sentences": [
            {
                "index": s.index,
                "text": s.text,
                "n_tokens": s.n_tokens,
                "token_ids": list(s.token_ids),
            }
            for s in manifest.sentences
        ],
    }
    if manifest.analysed is not None:
        out["analysed"] = manifest.analysed
    if manifest.files is not None:
        out["files"] = dict(manifest.files)
    return out


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
class SentenceResults:
    """One ``sentences/NNN.json``."""

    index: int
    text: str
    n_tokens: int
    tokens: rt.TokensTable
    tables: SentenceTables
    attention: AttentionMaps | None = None  # None past ``map_tokens`` tokens
    view_head: tuple[int, int] | None = None  # the (layer, head) the user chose to open on


@cache
def table_kinds(holder: type) -> dict[str, type[rt.Table]]:
    """Table name -> table class of one results file, from the fields of ``holder`` (its
    typed value: ``SentenceTables``, ``SetResults``) whose type is a table, in field
    order, which is the file's order. The one list of a file's tables: a new table is a
    class in ``tables`` (or ``roles``) and a field here."""
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


def _parse_tables(holder: type, obj: Any, where: str) -> dict[str, Any]:
    tables, optional = need(obj, "tables", where), optional_tables(holder)
    return {
        name: kind.from_json(need(tables, name, where), where)
        for name, kind in table_kinds(holder).items()
        if name not in optional or name in tables
    }


def _present(holder: Any) -> list[str]:
    """The table names that ``holder`` has (an optional table may be None), in file order."""
    return [name for name in table_kinds(type(holder)) if getattr(holder, name) is not None]


def _maps_from_json(att: Any, where: str) -> AttentionMaps:
    """Version 3 keeps scores, sinks and rank fixes; 1 and 2 also stored probs and ranks."""
    scores = need(att, "scores", where)
    try:
        if "rank_fixes" in att:
            return AttentionMaps.from_json(att)
        return AttentionMaps.from_stored(
            scores, need(att, "probs", where), need(att, "ranks", where)
        )
    except (KeyError, ValueError, TypeError, IndexError) as err:
        raise AttnReportError(f"{where}: the attention maps are malformed ({err})") from err


def sentence_from_json(obj: Any, where: str) -> SentenceResults:
    info = need(obj, "sentence", where)
    att = need(obj, "attention", where)
    maps = None if att is None else _maps_from_json(att, where)
    view = obj.get("view_head")
    return SentenceResults(
        index=int(need(info, "index", where)),
        text=str(need(info, "text", where)),
        n_tokens=int(need(info, "n_tokens", where)),
        tokens=rt.TokensTable.from_json(need(obj, "tokens", where), where),
        tables=SentenceTables(**_parse_tables(SentenceTables, obj, where)),
        attention=maps,
        view_head=None if view is None else (int(view[0]), int(view[1])),
    )


def sentence_to_json(s: SentenceResults, lazy: bool = False) -> dict[str, Any]:
    """The JSON value of ``sentences/NNN.json``; ``lazy``: table columns as ``LazyColumn``."""
    out: dict[str, Any] = {
        "schema": SCHEMA,
        "sentence": {"index": s.index, "text": s.text, "n_tokens": s.n_tokens},
        "tokens": s.tokens.to_json(),
        "attention": None if s.attention is None else s.attention.to_json(),
        "tables": {name: getattr(s.tables, name).to_json(lazy) for name in _present(s.tables)},
    }
    if s.view_head is not None:
        out["view_head"] = list(s.view_head)
    return out


def sentence_tables(s: SentenceResults) -> dict[str, Any]:
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
    probes: tuple[tuple[int, ...], ...] | None = None  # the induction probes' token ids


def set_from_json(obj: Any, where: str = "set.json") -> SetResults:
    probes = obj.get("probes") if isinstance(obj, dict) else None
    try:
        listed = None if probes is None else tuple(tuple(int(t) for t in p) for p in probes)
    except (TypeError, ValueError) as err:
        raise AttnReportError(f"{where}: the probes are malformed ({err})") from err
    return SetResults(**_parse_tables(SetResults, obj, where), probes=listed)


def set_tables(s: SetResults) -> dict[str, Any]:
    """The set's typed tables by their results name (those it has), in file order."""
    return {name: getattr(s, name) for name in _present(s)}


def set_to_json(s: SetResults) -> dict[str, Any]:
    tables = {n: getattr(s, n).to_json() for n in _present(s)}
    out: dict[str, Any] = {"schema": SCHEMA, "tables": tables}
    if s.probes is not None:
        out["probes"] = [list(p) for p in s.probes]
    return out
