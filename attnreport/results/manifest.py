"""The schema's version and the manifest: model, settings and sentences of one study.

``manifest.json`` names the model and everything needed to reproduce the numbers;
``manifest_from_json`` raises ``AttnReportError`` naming the file and the missing part,
``manifest_to_json`` gives the schema's JSON (``docs/results-schema.md``). The other
files' typed values are in ``attnreport.results.types``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from attnreport import vocabulary as V
from attnreport.errors import AttnReportError
from attnreport.jsontypes import Json
from attnreport.results.layers import LayerFacts, layer_facts_from_json, layer_facts_to_json

SCHEMA_VERSION = 11
SCHEMA = f"attnreport.results/{SCHEMA_VERSION}"
# version 1 lacks manifest.files and the optional columns; versions 1 and 2 store the
# attention probs and ranks (3 derives them) and write table columns as plain arrays;
# versions 1 to 3 write plain .json files, 4 gzip-compresses them (``layout``); 5 adds
# the head-role tables and the probes (``optional_tables``), the BOS contrast, the value
# norms and the mean grid's cells taken before the rotary rotation, which older folders lack;
# 6 adds the per-layer facts (``model.layers``: positions, windows, soft-caps, sinks, QK-norm);
# 7 keeps a long sentence's per-query tables past ``map_tokens`` as bins (``pooling``:
# ``span``) and the observations of an input the grids draw as blocks (``observed_blocks``);
# 8 takes the update sizes after a post-attention norm (``LayerFacts.post_norm``); 9
# scores previous-token heads over queries i >= 2 (``n_previous``) and counts the
# repeated-token queries of the set (``n_duplicate``), and the manifest describes the
# rotary parameters and the tokenizer (``ModelInfo.rope``, ``tokenizer_kind``, ``vocab_size``);
# 9 also splits each head's update sizes by its top key (``focus``: ``first_update``,
# ``other_update``) and captures the BOS contrast in the other condition whichever the run
# used, with its first-token probabilities (``bos_contrast``: ``first_prob``, ``n_first``, ``bos``);
# 9 also keeps a sentence's own file only for the sentences with a page (``kept``: ``settings.pages``);
# 9 also runs the scaling grid on several inputs (``scaling.sentences``; cells of the inputs not
# drawn keep their KL, gaps and changes only), scales Q or K once ("QK"), shares each
# input's unmodified pass between the grids, and keeps no same-layer maps for V
READABLE_VERSIONS = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11)

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
    # version 9: layer type ("" for all) -> rotary parameters (theta, type, factor,
    # original_context; ``models.described``), the tokenizer's algorithm in words and the
    # tokens it knows, special ones included (0: not recorded)
    rope: Json = field(default_factory=dict)
    tokenizer_kind: str = ""
    vocab_size: int = 0
    has_chat_template: bool = False  # the tokenizer carries a chat template
    extra: Json = field(default_factory=dict)


@dataclass(frozen=True)
class StudySettings:
    """The settings that changed the numbers, as recorded in the manifest."""

    breakdown_ranks: int = V.BREAKDOWN_RANKS
    epsilons: tuple[float, ...] = V.EPSILONS
    intervene_layer: int | None = None
    intervene_depth: float | None = None  # version 9 (a comparison's matched depth)
    scaling_sentence: int = 0
    scaling_sentences: tuple[int, ...] | None = None  # schema 9
    mean_sentences: tuple[int, ...] | None = None
    map_tokens: int = V.MAP_TOKENS
    view_head: tuple[int, ...] | None = None
    bos: str = V.BOS_DEFAULT  # one of vocabulary.BOS
    chat_template: bool = False  # each sentence read as a user message in it (version 9)
    extra: Json = field(default_factory=dict)


@dataclass(frozen=True, eq=False)
class SentenceId:
    """Which sentence: what the manifest lists of it and its results file begins with."""

    index: int
    text: str
    n_tokens: int


@dataclass(frozen=True)
class ListedSentence(SentenceId):
    token_ids: tuple[int, ...]


@dataclass(frozen=True)
class Manifest:
    """``manifest.json``: what made the results (attnreport's version, the model, the
    settings), the sentences in order with their token ids, and every other file's size."""

    attnreport_version: str
    model: ModelInfo
    settings: StudySettings
    sentences: tuple[ListedSentence, ...]
    files: dict[str, int] | None = None  # every other file -> its size in bytes (v2)
    analysed: str | None = None  # ISO day of the analysis (``dates.analysis_date``; v5)


def _tuple_or_none(value: Any) -> tuple[Any, ...] | None:
    return None if value is None else tuple(value)


def _known(cls: type, obj: Json) -> tuple[Json, Json]:
    names = {f.name for f in fields(cls)} - {"extra"}
    return {k: v for k, v in obj.items() if k in names}, {
        k: v for k, v in obj.items() if k not in names
    }


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _with_extra(obj: Any) -> Json:
    out = {f.name: _plain(getattr(obj, f.name)) for f in fields(obj) if f.name != "extra"}
    return {**obj.extra, **out}


# the model card's facts (version 9)
DESCRIBED = ("rope", "tokenizer_kind", "vocab_size", "has_chat_template")


def _model_json(model: ModelInfo) -> Json:
    """The manifest's model object; ``layers`` only where found (folders written before
    version 6 round-trip without it)."""
    out = _with_extra(model)
    if model.layers:
        out["layers"] = layer_facts_to_json(model.layers)
    else:
        out.pop("layers")
    for name in DESCRIBED:  # written since version 9, only where recorded
        if not out[name]:
            out.pop(name)
    return out


def model_from_json(obj: Any, where: str) -> ModelInfo:
    if not isinstance(obj, dict):
        raise AttnReportError(f"{where} is incomplete: its model is not an object")
    known, extra = _known(ModelInfo, obj)
    missing = [
        f.name
        for f in fields(ModelInfo)
        if f.name not in known
        and f.name not in ("features", "layer_windows", "layers", "extra", *DESCRIBED)
    ]
    if missing:
        raise AttnReportError(f"{where} is incomplete: model has no {missing[0]!r}")
    known["features"] = tuple(known.get("features", ()))
    windows = known.get("layer_windows", {})
    if not isinstance(windows, dict):
        raise AttnReportError(f"{where} is malformed: model.layer_windows is not an object")
    known["layer_windows"] = {int(layer): int(w) for layer, w in windows.items()}
    known["layers"] = layer_facts_from_json(known.get("layers"), where)
    if not isinstance(known.get("rope", {}), dict):
        raise AttnReportError(f"{where} is malformed: model.rope is not an object")
    return ModelInfo(**known, extra=extra)


def settings_from_json(obj: Any) -> StudySettings:
    known, extra = _known(StudySettings, obj or {})
    for name in ("epsilons", "scaling_sentences", "mean_sentences", "view_head"):
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


def manifest_to_json(manifest: Manifest) -> Json:
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
