"""Chart builders: valid Vega-Lite, stable specs, small pages, safe payloads, chunks, images.

Snapshots live in ``tests/snapshots/<model>--<figure key>.json``; after an intended
change, regenerate them with ``ATTNREPORT_UPDATE_SNAPSHOTS=1 python -m pytest
tests/test_charts.py`` and review the diff.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import struct
from dataclasses import replace
from pathlib import Path

import pytest
from altair.utils.schemapi import validate_jsonschema
from altair.vegalite.v6.schema.core import load_schema
from hypothesis import given
from hypothesis import strategies as st

from attnreport.charts import index_figures, sentence_figures
from attnreport.charts.export import embed, images
from attnreport.charts.export import png as png_codec
from attnreport.charts.export.embed import (
    chunk_file_name,
    chunk_files,
    decode_columns,
    figure_payload,
)
from attnreport.charts.figure import Figure
from attnreport.charts.figures import block_impact
from attnreport.charts.figures.attention import attention_map_figure, attention_map_rows
from attnreport.charts.figures.columns import rounded, sentence_tokens
from attnreport.charts.spec.assemble import columns_to_rows, static_view
from attnreport.charts.spec.position_window import POSITION_WINDOW, WINDOW_PARAM
from tests.fixtures.fake_results import fake_sentence, fake_study, typed, typed_sentence
from tests.spec_walk import walk

SNAPSHOTS = Path(__file__).parent / "snapshots"
UPDATE = os.environ.get("ATTNREPORT_UPDATE_SNAPSHOTS") == "1"
SENTENCE_KEYS = [
    "attention-map",
    "attention-breakdown",
    "bias-vs-position",
    "self-focus",
    "first-focus",
    "concentration",
    "update-magnitude",
    "update-orientation",
    "orientation-vs-magnitude",
    "impact-by-position",
    "scaling-grid",
    "mean-grid",
]
INDEX_KEYS = [
    "set-self-focus",
    "set-first-focus",
    "set-sink-rate",
    "set-concentration",
    "set-head-impact",
]
HOSTILE = [
    "</script><img src=x onerror=alert(1)>",
    " \"quoted\" 'single' & <b>",
    " \U0001f600\u200d\U0001f525",
    " \u05e9\u05dc\u05d5\u05dd",
    " nul\x00byte",
    " line\u2028sep\u2029para",
    "<!--",
]


@pytest.fixture(scope="module")
def studies() -> dict[str, dict]:
    return {p: typed(fake_study(positional=p)) for p in ("rope", "absolute", "alibi")}


@pytest.fixture(scope="module")
def figures(studies) -> dict[str, list[Figure]]:
    out = {}
    for name, study in studies.items():
        s0 = study.sentences[0]
        out[name] = sentence_figures(s0, study.interventions, study.manifest, study.sentences)
    rope = studies["rope"]
    out["index"] = index_figures(rope.set, rope.manifest, rope.sentences)
    return out


@pytest.fixture(scope="module")
def big_study() -> dict:
    """The budget case: 30 layers x 9 heads, a 60-token sentence (plus two for the mean grid)."""
    return typed(fake_study(n_sentences=3, n_layers=30, n_heads=9, n_tokens=60))


@pytest.fixture(scope="module")
def hostile_figures() -> list[Figure]:
    study = fake_study(n_tokens=len(HOSTILE))
    from tests.fixtures.fake_results import fake_manifest, fake_sentence

    sentences = [fake_sentence(0, tokens=HOSTILE, n_tokens=len(HOSTILE))] + study["sentences"][1:]
    manifest = fake_manifest(sentences, n_layers=4, n_heads=3)
    r = typed({**study, "sentences": sentences, "manifest": manifest})
    return sentence_figures(
        r.sentences[0], r.interventions, r.manifest, r.sentences
    ) + index_figures(r.set, r.manifest, r.sentences)


def all_figures(figures) -> list[Figure]:
    return [f for figs in figures.values() for f in figs]


def test_figures_come_in_study_order(figures, studies):
    for name in ("rope", "absolute", "alibi"):
        rotary = ["mean-grid-before-rotation"] if name == "rope" else []
        assert [f.key for f in figures[name]] == SENTENCE_KEYS + rotary
    assert [f.key for f in figures["index"]] == INDEX_KEYS
    study = studies["rope"]
    without = sentence_figures(study.sentences[0], None, study.manifest)
    assert [f.key for f in without] == SENTENCE_KEYS[:10]
    alone = sentence_figures(study.sentences[0], study.interventions, study.manifest)
    params = {p["name"]: p.get("value") for p in alone[-2].spec["params"]}
    assert list(params["sentence_tokens"]) == ["0"]  # others: positions in the tooltips


def test_windowed_layers_are_shaded_on_layer_axes_and_named_in_captions(studies):
    """Layer 1 of the fake model attends through a 3-token window: every figure with a
    layer x axis shades exactly that layer, and the map and the layer figures name it."""
    rope = studies["rope"]
    model = replace(rope.manifest.model, layer_windows={1: 3})
    manifest = replace(rope.manifest, model=model)
    s0 = rope.sentences[0]
    figs = sentence_figures(s0, rope.interventions, manifest, rope.sentences)
    figs += index_figures(rope.set, manifest, rope.sentences)
    schema = load_schema()
    shaded = {"self-focus", "first-focus", "concentration", "set-self-focus",
              "set-first-focus", "set-concentration", "set-sink-rate"}  # fmt: skip
    for fig in figs:
        bands = [
            part["data"]["values"]
            for part in fig.spec.get("layer", [])
            if part.get("mark", {}).get("type") == "rect" and "values" in part.get("data", {})
        ]
        assert bands == (
            [[{"from": 0.5, "to": 1.5, "layer": 1, "window": 3}]] if fig.key in shaded else []
        )
        if fig.key in shaded or fig.key in ("attention-map", "attention-breakdown"):
            assert "layer 1 has a window of 3 tokens" in fig.caption, fig.key
        validate_jsonschema(fig.spec, schema)


def test_every_spec_validates_against_vega_lite(figures):
    """Builders validate through Altair's ``to_dict()``; this re-checks the final dicts."""
    schema = load_schema()
    for fig in all_figures(figures):
        validate_jsonschema(fig.spec, schema)
        if fig in figures["rope"]:  # static specs differ only in their data (slow to check all)
            validate_jsonschema(fig.static_spec, schema)
        if fig.phone_spec is not None:  # the intervention grids' layout for a phone
            validate_jsonschema(fig.phone_spec, schema)
            assert fig.phone_spec["data"] == {"name": fig.key}
        assert fig.spec["data"] == {"name": fig.key}
        assert fig.title and fig.caption and fig.spec.get("title")


def test_position_term_follows_the_model(figures):
    rope, absolute = (dict((f.key, f) for f in figures[n]) for n in ("rope", "absolute"))
    assert "RoPE" in rope["attention-breakdown"].caption
    assert "position" in json.dumps(rope["attention-breakdown"].spec["transform"])
    caption = absolute["attention-breakdown"].caption
    assert "absolute position" in caption and "no separate position term" in caption
    folds = [t for t in absolute["attention-breakdown"].spec["transform"] if "fold" in t]
    assert folds and "position" not in folds[0]["fold"]
    assert "position" not in absolute["bias-vs-position"].inline
    alibi = dict((f.key, f) for f in figures["alibi"])
    assert "ALiBi" in alibi["attention-breakdown"].caption


@pytest.mark.parametrize("group", ["rope", "absolute", "index"])
def test_specs_match_snapshots(figures, group):
    SNAPSHOTS.mkdir(exist_ok=True)
    for fig in figures[group]:
        path = SNAPSHOTS / f"{group}--{fig.key}.json"
        text = json.dumps(fig.spec, sort_keys=True, indent=1, ensure_ascii=False) + "\n"
        if UPDATE or not path.exists():
            path.write_text(text, encoding="utf-8")
            if not UPDATE:
                pytest.fail(f"new snapshot {path.name} written; check it and commit it")
        assert text == path.read_text(encoding="utf-8"), (
            f"{path.name} changed; if intended: ATTNREPORT_UPDATE_SNAPSHOTS=1 pytest {__file__}"
        )


def test_sentence_page_payload_is_under_one_megabyte(big_study):
    s0 = big_study.sentences[0]
    figs = sentence_figures(s0, big_study.interventions, big_study.manifest, big_study.sentences)
    sizes = {f.key: len(figure_payload(f).encode("utf-8")) for f in figs}
    assert sum(sizes.values()) < 1_000_000, sizes
    assert max(sizes.values()) < 300_000, sizes


def test_hostile_tokens_never_appear_raw(hostile_figures):
    expected = sentence_tokens(
        typed_sentence(fake_sentence(0, tokens=HOSTILE, n_tokens=len(HOSTILE)))
    )
    assert HOSTILE[0] in expected
    seen_tokens = False
    for fig in hostile_figures:
        texts = [figure_payload(fig), *chunk_files(fig).values()]
        for text in texts:
            for raw in ("</script", "<img", "<!--", "<", ">", "&", "\u2028", "\u2029", "\x00"):
                assert raw not in text, (fig.key, raw)
            assert text.isascii()
        payload = json.loads(figure_payload(fig))
        params = {s["name"]: s.get("value") for s in payload["spec"].get("signals", [])}
        if "tokens" in params:
            assert params["tokens"] == expected
            seen_tokens = True
    assert seen_tokens


def _chunk_columns(source: str) -> tuple[str, dict]:
    """(registered id, encoded columns) of a chunk file's JS source."""
    prefix, suffix = "window.attnreport.register(", ");\n"
    assert source.startswith(prefix) and source.endswith(suffix)
    ident, columns = json.loads("[" + source[len(prefix) : -len(suffix)] + "]")
    return ident, columns


def test_chunks_referenced_by_payloads_exist_and_match(figures):
    for fig in all_figures(figures):
        payload = json.loads(figure_payload(fig))
        files = chunk_files(fig)
        named = set(payload["chunks"].values())
        if fig.chunk_source:  # checked in test_shared_chunks_come_from_a_figure_of_the_page
            assert files == {} and fig.chunks == {} and payload["chunk_source"] == fig.chunk_source
            continue
        assert payload["chunk_source"] is None
        assert named == set(fig.chunks)
        for chunk in named:
            ident, columns = _chunk_columns(files[chunk_file_name(fig.key, chunk)])
            assert ident == f"{fig.key}--{chunk}"
            assert decode_columns(columns) == fig.chunks[chunk]
        values = {p["name"]: p.get("value") for p in fig.spec.get("params", [])}
        key = "|".join(str(values[p]) for p in payload["chunk_params"])
        if fig.chunks and payload["inline_chunk"] is None:
            # the page inlines part of the default view; its file holds the rest, no repeat
            rest = fig.chunks[payload["chunks"][key]]
            inline = decode_columns(payload["inline"])
            assert set(rest) == set(inline)
            shown = set(zip(*(inline[c] for c in sorted(inline)), strict=True))
            assert not shown & set(zip(*(rest[c] for c in sorted(rest)), strict=True))
        elif fig.chunks:
            assert payload["inline_chunk"] in named
            ident, columns = _chunk_columns(
                files[chunk_file_name(fig.key, payload["inline_chunk"])]
            )
            assert decode_columns(payload["inline"]) == decode_columns(columns)
            # the widgets' initial values select the inlined chunk
            assert payload["chunks"][key] == payload["inline_chunk"]
        else:
            assert files == {} and payload["chunk_params"] == []
        assert decode_columns(payload["inline"]) == fig.inline


def test_shared_chunks_come_from_a_figure_of_the_page(figures):
    """Bias vs position reads the breakdown's chunk files: same chunk names and params, and
    each of those files holds every column it draws (its inline rows are the default one's)."""
    shared = 0
    for group in ("rope", "absolute", "alibi"):
        by_key = {f.key: f for f in figures[group]}
        for fig in figures[group]:
            if not fig.chunk_source:
                continue
            shared += 1
            source = by_key[fig.chunk_source]
            assert source.chunks and not source.chunk_source
            assert fig.chunk_names == source.chunk_names
            assert fig.selecting_params == source.selecting_params
            assert fig.inline_chunk == source.inline_chunk
            for chunk in source.chunks.values():
                assert set(fig.inline) <= set(chunk)
            default = source.chunks[fig.inline_chunk]
            assert {name: default[name] for name in fig.inline} == fig.inline
    assert shared == 9  # bias-vs-position and both update histograms on each model


def test_static_spec_holds_the_inline_rows(figures):
    for fig in all_figures(figures):
        rows = fig.static_spec["data"]["values"]
        n = len(next(iter(fig.inline.values()))) if fig.inline else 0
        assert len(rows) == n


def test_static_specs_leave_out_interaction_only_layers(figures):
    """No invisible hover layers in the images, and no reference to a selection left dangling."""
    for fig in all_figures(figures):
        nodes = list(walk({k: v for k, v in fig.static_spec.items() if k != "data"}))
        for node in nodes:
            for layer in node.get("layer", []):
                assert layer.get("mark", {}).get("opacity") != 0, fig.key
        defined = {p["name"] for node in nodes for p in node.get("params", [])}
        used = {node["param"] for node in nodes if isinstance(node.get("param"), str)}
        assert used <= defined, (fig.key, used - defined)
        # nothing only the pointer uses: tooltips, points over lines, ARIA text per mark
        assert fig.static_spec["config"]["aria"] is False
        for node in nodes:
            assert "tooltip" not in node.get("encoding", {}), fig.key
            if isinstance(node.get("mark"), dict) and node["mark"]["type"] == "line":
                assert "point" not in node["mark"], fig.key
    focus = next(f for f in figures["rope"] if f.key == "self-focus")
    assert focus.spec["layer"][0]["mark"]["point"] and focus.spec["layer"][0]["encoding"]["tooltip"]
    impact = next(f for f in figures["rope"] if f.key == "impact-by-position")
    assert len(impact.spec["layer"]) == 3 and len(impact.static_spec["layer"]) == 2
    assert "pick" not in json.dumps(impact.static_spec)
    lines = impact.static_spec["layer"][0]["encoding"]["opacity"]
    assert lines == {"value": 0.85}  # as drawn with the pointer away: every layer shows


def test_static_view_resolves_conditions_on_dropped_selections():
    spec = {
        "data": {"name": "k"},
        "params": [{"name": "hov", "select": "point", "views": ["catch"]}],
        "layer": [
            {
                "mark": "line",
                "encoding": {
                    "opacity": {"condition": {"param": "hov", "value": 1}, "value": 0.1},
                    "size": {"condition": {"param": "hov", "empty": False, "value": 3}, "value": 1},
                    "color": {
                        "condition": [
                            {"test": "datum.x > 1", "value": "red"},
                            {"param": "hov", "field": "c", "type": "nominal"},
                        ],
                        "value": "grey",
                    },
                },
            },
            {"name": "catch", "mark": {"type": "point", "opacity": 0}},
        ],
    }
    static = static_view(spec, {"x": [1, 2]})
    assert "params" not in static and len(static["layer"]) == 1
    assert static["layer"][0]["encoding"] == {
        "opacity": {"value": 1},
        "size": {"value": 1},
        "color": {
            "field": "c",
            "type": "nominal",
            "condition": [{"test": "datum.x > 1", "value": "red"}],
        },
    }
    assert static["data"] == {"values": [{"x": 1}, {"x": 2}]}
    assert spec["layer"][1]["name"] == "catch"  # the interactive spec is left as it was


def test_histogram_bars_count_tokens_per_bin(big_study):
    """Tooltip fields join the aggregation's groupby: the measure must be binned there too,
    or every bar splits into one-token pieces (60 tokens a head: histograms, not strips)."""
    import vl_convert

    s0 = big_study.sentences[0]
    page = sentence_figures(s0, big_study.interventions, big_study.manifest, big_study.sentences)
    drawn = [fig for fig in page if fig.key.startswith("update-")]
    assert len(drawn) == 2
    for fig in drawn:
        if fig.key.startswith("update-"):
            vega = vl_convert.vegalite_to_vega(fig.static_spec, vl_version=images.VL_VERSION)
            measure = fig.key.removeprefix("update-")
            groupbys = [
                t["groupby"]
                for d in vega["data"]
                for t in d.get("transform", [])
                if t["type"] == "aggregate" and "__count" in t.get("as", [])
            ]
            assert groupbys and all(measure not in g for g in groupbys), groupbys


def decode_png(png: bytes) -> list[list[tuple[int, ...]]]:
    """Reference PNG decoder (8-bit, non-interlaced; every filter type, palette, RGB, RGBA):
    rows of RGBA tuples. Plain loops, written from the PNG specification."""
    import struct
    import zlib

    chunks = png_codec.png_chunks(png)
    data = {kind: payload for kind, payload in chunks if kind != b"IDAT"}
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", data[b"IHDR"])
    assert depth == 8 and interlace == 0
    channels = {2: 3, 3: 1, 6: 4}[colour]
    raw = zlib.decompress(b"".join(p for kind, p in chunks if kind == b"IDAT"))
    stride, previous, rows = width * channels, [0] * width * channels, []
    for r in range(height):
        kind, line = raw[r * (stride + 1)], list(raw[r * (stride + 1) + 1 : (r + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b, c = previous[i], previous[i - channels] if i >= channels else 0
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            paeth = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
            line[i] = (line[i] + [0, a, b, (a + b) // 2, paeth][kind]) % 256
        previous = line
        pixels = [tuple(line[i : i + channels]) for i in range(0, stride, channels)]
        if colour == 3:
            palette, alpha = data[b"PLTE"], data.get(b"tRNS", b"")
            pixels = [
                (*palette[3 * k : 3 * k + 3], alpha[k] if k < len(alpha) else 255)
                for (k,) in pixels
            ]
        rows.append([px if len(px) == 4 else (*px, 255) for px in pixels])
    return rows


def test_png_optimisation_keeps_every_pixel(figures):
    import struct
    import zlib

    import vl_convert

    kinds = set()
    for key in ("update-magnitude", "attention-map"):  # few colours (palette), many (RGB)
        fig = next(f for f in figures["rope"] if f.key == key)
        png = vl_convert.vegalite_to_png(fig.static_spec, vl_version=images.VL_VERSION)
        smaller = png_codec.optimize_png(png)
        assert len(smaller) < 0.7 * len(png), key
        assert decode_png(smaller) == decode_png(png), key
        kinds.add(png_codec.png_chunks(smaller)[0][1][9])  # IHDR colour type
        assert [k for k, _ in png_codec.png_chunks(smaller)][-2:] == [b"IDAT", b"IEND"]
    assert kinds == {2, 3}
    # rows with the Paeth and Average filters (vl-convert writes none): only re-deflated
    header = struct.pack(">IIBBBBB", 3, 3, 8, 6, 0, 0, 0)
    raw = bytes([0, *range(12), 4, *range(50, 62), 3, *range(200, 212)])
    chunks = [(b"IHDR", header), (b"IDAT", zlib.compress(raw, 0)), (b"IEND", b"")]
    png = png_codec.PNG_SIGNATURE + b"".join(
        struct.pack(">I", len(d)) + k + d + struct.pack(">I", zlib.crc32(k + d)) for k, d in chunks
    )
    assert decode_png(png_codec.optimize_png(png)) == decode_png(png)


values = st.one_of(st.integers(-5, 5), st.sampled_from([0.5, 1.0, -2.25]), st.sampled_from("ab"))


@given(st.lists(values, max_size=40))
def test_column_encoding_round_trips(column):
    encoded = embed.encode_column(column)
    assert embed.decode_column(encoded) == column
    assert len(json.dumps(encoded)) <= len(json.dumps(column)) + 2


def test_images_export_a_small_figure(figures):
    fig = next(f for f in figures["rope"] if f.key == "self-focus")
    svg, png = images.export_images(fig)
    assert "<svg" in svg
    assert png.startswith(b"\x89PNG\r\n\x1a\n")


def test_oversized_static_spec_is_refused_without_vl_convert(figures, monkeypatch, caplog):
    def boom(*args, **kwargs):
        raise AssertionError("vl-convert must not be called")

    monkeypatch.setattr(images.vl_convert, "vegalite_to_svg", boom)
    monkeypatch.setattr(images.vl_convert, "vegalite_to_png", boom)
    fig = next(f for f in figures["rope"] if f.key == "attention-map")
    rows = [{"query": 0, "key": 0, "score": 0.0}] * (images.MAX_ROWS + 1)
    big = replace(fig, static_spec={**fig.static_spec, "data": {"values": rows}})
    with caplog.at_level(logging.WARNING, logger="attnreport.charts.export.images"):
        assert images.export_images(big) is None
    assert "no static image" in caplog.text
    heavy = replace(
        fig, static_spec={**fig.static_spec, "description": "x" * (images.MAX_BYTES + 1)}
    )
    assert images.export_images(heavy) is None


def _expression(expr: str):
    """A Python function of (row, params) for the simple Vega expressions the charts use
    (``datum.x``, arithmetic, comparisons, ``&&``, ``exp``, ``tokens[...]``)."""
    py = re.sub(r"datum\.(\w+)", r'd["\1"]', expr).replace("&&", " and ").replace("||", " or ")
    code = compile(re.sub(r"\bexp\(", "math.exp(", py), expr, "eval")
    return lambda d, params: eval(code, {"math": math}, {**params, "d": d})


def _groups(rows: list[dict], by: list[str]) -> dict[tuple, list[dict]]:
    out: dict[tuple, list[dict]] = {}
    for row in rows:
        out.setdefault(tuple(row[f] for f in by), []).append(row)
    return out


def run_transforms(transforms: list[dict], rows: list[dict], params: dict) -> list[dict]:
    """Evaluate a Vega-Lite transform list the way Vega does, for the transforms used here:
    filter, calculate, joinaggregate (max, sum) and window (row_number)."""
    rows = [dict(r) for r in rows]
    for t in transforms:
        if "filter" in t:
            keep = _expression(t["filter"])
            rows = [r for r in rows if keep(r, params)]
        elif "calculate" in t:
            value = _expression(t["calculate"])
            for r in rows:
                r[t["as"]] = value(r, params)
        elif "joinaggregate" in t:
            for group in _groups(rows, t.get("groupby", [])).values():
                for agg in t["joinaggregate"]:
                    values = [r[agg["field"]] for r in group]
                    total = {"max": max, "sum": math.fsum}[agg["op"]](values)
                    for r in group:
                        r[agg["as"]] = total
        elif "window" in t:
            assert [w["op"] for w in t["window"]] == ["row_number"], t
            sort = t.get("sort", [])

            def order(r, sort=sort):
                return tuple(-r[s["field"]] if s.get("order") == "descending" else r[s["field"]]
                             for s in sort)  # fmt: skip

            for group in _groups(rows, t.get("groupby", [])).values():
                for number, r in enumerate(sorted(group, key=order), start=1):
                    r[t["window"][0]["as"]] = number
        else:
            raise AssertionError(f"transform not handled here: {t}")
    return rows


def test_attention_map_probabilities_count_the_sink_logits():
    """With sink logits (gpt-oss), the probability the map derives is the model's: the
    sink takes its share of each row, so the row's probabilities sum to less than 1. A
    layer without a sink in such a model gets one that takes nothing."""
    from attnreport.charts.figures.attention import NO_SINK
    from attnreport.results.maps import AttentionMaps

    sentence = typed_sentence(fake_sentence(0, n_layers=2, n_heads=3, n_tokens=12))
    sinks = [[2.5, -1.0, 0.0], None]
    maps = AttentionMaps(sentence.attention.scores, sinks)
    with_sinks = replace(sentence, attention=maps)
    fig = attention_map_figure(with_sinks)
    params = {p["name"]: p.get("value") for p in fig.spec["params"]}
    per_head = attention_map_rows(with_sinks)
    assert per_head[(0, 0)]["sink"][0] == 2.5 and per_head[(1, 2)]["sink"][0] == NO_SINK
    for (layer, head), columns in per_head.items():
        rows = run_transforms(
            fig.spec["transform"],
            columns_to_rows(columns),
            {**params, "layer": layer, "head": head},
        )
        for r in rows:
            expected = maps.probs[layer][head][r["query"]][r["key"]]
            assert abs(r["prob"] - expected) < 1e-3, (layer, head, r["query"], r["key"])
        row_sum = sum(r["prob"] for r in rows if r["query"] == 5)
        assert row_sum < 1 - 1e-3 if layer == 0 else abs(row_sum - 1) < 1e-3
    plain = attention_map_figure(sentence)  # no sinks: no sink column, the plain softmax
    assert "sink" not in attention_map_rows(sentence)[(0, 0)]
    assert "sink" not in json.dumps(plain.spec["transform"])


def test_attention_map_sends_scores_and_derives_prob_and_rank():
    """Probabilities and ranks that the spec computes from the scores sent match the results:
    probabilities within 1e-3, ranks exactly (ties to the lower key) unless the results'
    scores of the row tie too."""
    raw_sentence = fake_sentence(0, n_layers=3, n_heads=3, n_tokens=30)
    sentence = typed_sentence(raw_sentence)
    fig = attention_map_figure(sentence)
    att = raw_sentence["attention"]
    params = {p["name"]: p.get("value") for p in fig.spec["params"]}
    widened = 0
    per_head = attention_map_rows(sentence)
    for layer in range(3):  # a layer's data file holds its heads, the inlined one left out
        joined = {(h, q, k) for lay, h in per_head if lay == layer
                  for q, k in zip(per_head[(lay, h)]["query"], per_head[(lay, h)]["key"], strict=True)}  # fmt: skip
        chunk = fig.chunks[fig.chunk_names[str(layer)]]
        inline = {(h, q, k) for h, q, k in zip(fig.inline["head"], fig.inline["query"],
                                               fig.inline["key"], strict=True) if layer == fig.inline["layer"][0]}  # fmt: skip
        assert set(zip(chunk["head"], chunk["query"], chunk["key"], strict=True)) | inline == joined
    for (layer, head), columns in per_head.items():
        assert list(columns) == ["layer", "head", "query", "key", "score"]
        widened += sum(round(v, 3) != v for v in columns["score"])
        rows = run_transforms(
            fig.spec["transform"],
            columns_to_rows(columns),
            {**params, "layer": layer, "head": head},
        )
        assert len(rows) == len(columns["score"])
        for r in rows:
            i, j = r["query"], r["key"]
            assert abs(r["prob"] - att["probs"][layer][head][i][j]) < 1e-3, (layer, head, i, j)
            raw = att["scores"][layer][head][i]
            if len(set(raw)) == len(raw):
                assert r["rank"] == att["ranks"][layer][head][i][j], (layer, head, i, j)
            assert r["query_token"] == sentence_tokens(sentence)[i]
        dots = run_transforms(fig.spec["layer"][1]["transform"][:1], rows, params)
        assert sorted((r["query"], r["key"]) for r in dots) == [
            (i, att["ranks"][layer][head][i].index(0)) for i in range(len(att["ranks"][0][0]))
        ]
    assert widened  # some rows needed more digits than 3 decimals to keep their order


def test_small_chunks_pack_into_few_files_and_the_default_stays_alone():
    """Layers of 3 rows each, packing limit 7: the default layer 2 is a file of its own,
    the others pack in runs that close once they hold 7 rows or more."""
    from attnreport.charts.spec.assemble import pack_chunks

    chunks = {(layer,): {"layer": [layer] * 3, "value": [0.5] * 3} for layer in range(8)}
    names, packed = pack_chunks(("layer",), chunks, default=(2,), limit=7)
    assert names == {
        (0,): "l0-to-l1", (1,): "l0-to-l1", (2,): "l2",
        (3,): "l3-to-l5", (4,): "l3-to-l5", (5,): "l3-to-l5",
        (6,): "l6-to-l7", (7,): "l6-to-l7",
    }  # fmt: skip
    assert packed["l3-to-l5"]["layer"] == [3, 3, 3, 4, 4, 4, 5, 5, 5]
    assert packed["l2"] is chunks[(2,)]
    big = {(layer,): {"layer": [layer] * 9} for layer in range(3)}
    assert set(pack_chunks(("layer",), big, default=(0,), limit=7)[1]) == {"l0", "l1", "l2"}


def _bits(values):
    return [struct.pack("<d", v) for v in values]


@given(
    st.lists(
        st.one_of(
            st.floats(allow_nan=True, allow_infinity=True),
            st.floats(-1e4, 1e4),
            # decimals at the rounding boundary: 0.125, 2.675, 1.0005, ...
            st.integers(-(10**7), 10**7).map(lambda n: n / 10**4 + 5e-5),
            st.integers(-(10**6), 10**6).map(lambda n: (2 * n + 1) / 2000),
        ),
        max_size=50,
    ),
    st.integers(0, 6),
)
def test_vectorised_rounding_is_pythons_round_bit_for_bit(values, decimals):
    expected = [round(v, decimals) for v in values]
    got = rounded(values, decimals)
    assert [repr(v) for v in got] == [repr(v) for v in expected]
    assert _bits(got) == _bits(expected)  # signs of zeros too


def test_long_input_impact_by_position_draws_one_window_at_a_time():
    """Past POSITION_WINDOW tokens, figure 10 inlines the first window's rows, keeps every
    other window in a data file of its own key, filters by the slider and says so."""
    n_tokens, window = 300, POSITION_WINDOW
    fig = block_impact.block_impact_figure(
        typed_sentence(fake_sentence(0, n_layers=2, n_heads=2, n_tokens=n_tokens))
    )
    validate_jsonschema(fig.spec, load_schema())
    validate_jsonschema(fig.static_spec, load_schema())
    slider = next(p for p in fig.spec["params"] if p["name"] == WINDOW_PARAM)
    assert slider["value"] == 0
    assert (slider["bind"]["min"], slider["bind"]["max"], slider["bind"]["step"]) == (0, 256, 128)
    assert fig.chunk_params == (WINDOW_PARAM,)
    assert set(fig.chunk_names) == {"0", "128", "256"}
    assert sorted(set(fig.inline["query"])) == list(range(window))  # the first window
    assert len(fig.inline["query"]) == 2 * window  # every layer
    # every (layer, position) row in exactly one data file, the one its window's key names
    files = {name: list(zip(r["layer"], r["query"], strict=True)) for name, r in fig.chunks.items()}
    every = sorted(row for rows in files.values() for row in rows)
    assert every == [(layer, q) for layer in range(2) for q in range(n_tokens)]
    for key, name in fig.chunk_names.items():
        start = int(key)
        wanted = {
            (layer, q) for layer in range(2) for q in range(start, min(start + window, n_tokens))
        }
        assert wanted <= set(files[name]), key
    spec = json.dumps(fig.spec)
    assert f"datum.query >= positions_from && datum.query < positions_from + {window}" in spec
    assert f"' of {n_tokens}'" in spec and "positions at a time" in fig.caption
    assert f"This input has {n_tokens} tokens" in fig.caption
    static_rows = fig.static_spec["data"]["values"]
    assert max(r["query"] for r in static_rows) == window - 1  # the image: the first window
    # a short input has no slider, no data file and the plain title
    short = block_impact.block_impact_figure(typed_sentence(fake_sentence(0, n_tokens=window)))
    assert not short.chunks and WINDOW_PARAM not in json.dumps(short.spec)
    assert short.spec["title"]["text"] == "Impact by position"


def _filters(spec: dict) -> list[str]:
    return [t["filter"] for t in spec.get("transform", []) if isinstance(t.get("filter"), str)]


@pytest.mark.parametrize("key", ["attention-breakdown", "bias-vs-position"])
def test_long_input_breakdown_figures_draw_one_window_at_a_time(key):
    """Past POSITION_WINDOW tokens, figures 2 and 3 keep their per-layer data (every
    position) and draw the slider's window of it: the filter, the slider, the title, the
    caption and the alt text say so; the x axis takes the window's positions, not all."""
    from attnreport.charts.figures.breakdown import (
        ROW_FILTER,
        bias_position_figure,
        breakdown_figure,
    )
    from attnreport.charts.registry import entry_of
    from attnreport.charts.spec.common import cell_step, default_head
    from attnreport.results.types import sentence_tables
    from attnreport.site.words.alt_text import AltData
    from tests.fixtures.fake_results import fake_manifest

    build = breakdown_figure if key == "attention-breakdown" else bias_position_figure

    def figure(n_tokens):
        raw = fake_sentence(0, n_layers=2, n_heads=2, n_tokens=n_tokens)
        manifest = typed({**fake_study(n_layers=2, n_heads=2), "manifest": fake_manifest(
            [raw], n_layers=2, n_heads=2)}).manifest  # fmt: skip
        return raw, build(typed_sentence(raw), manifest)

    n_tokens, window = 300, POSITION_WINDOW
    raw, fig = figure(n_tokens)
    validate_jsonschema(fig.spec, load_schema())
    validate_jsonschema(fig.static_spec, load_schema())
    slider = next(p for p in fig.spec["params"] if p["name"] == WINDOW_PARAM)
    assert slider["value"] == 0
    assert (slider["bind"]["min"], slider["bind"]["max"], slider["bind"]["step"]) == (0, 256, 128)
    window_filter = f"datum.query >= positions_from && datum.query < positions_from + {window}"
    assert _filters(fig.spec)[0] == f"{ROW_FILTER} && {window_filter}"
    # one data file per (layer, head), every position: a long input's whole layer is too
    # much to inline; the page inlines the default head's rows only
    assert fig.chunk_params == ("layer", "head")
    assert set(fig.chunk_names) == {f"{la}|{h}" for la in range(2) for h in range(2)}
    for rows in fig.chunks.values():
        assert sorted(set(rows["query"])) == list(range(n_tokens))
    assert sorted(set(fig.inline["query"])) == list(range(n_tokens))
    first = default_head(typed_sentence(raw))
    assert set(zip(fig.inline["layer"], fig.inline["head"], strict=True)) == {first}
    bd = raw["tables"]["breakdown"]["columns"]
    assert len(fig.inline["query"]) == sum(
        1 for la, h in zip(bd["layer"], bd["head"], strict=True) if (la, h) == first
    )
    spec = json.dumps(fig.spec)
    assert f"' of {n_tokens}'" in spec and "'positions ' + positions_from" in spec
    assert f"This input has {n_tokens} tokens" in fig.caption and "at a time" in fig.caption
    x = fig.spec.get("encoding", {}).get("x") or fig.spec["layer"][0]["encoding"]["x"]
    assert "scale" not in x  # the window's positions, not a fixed 300-position domain
    assert fig.spec["width"] == {"step": cell_step(window)}
    data = AltData(sentence_tables(typed_sentence(raw)), n_tokens)
    assert f"It shows positions 0-{window - 1} of {n_tokens}." in entry_of(key).alt(data)
    # an input of exactly one window is drawn whole, as before
    raw, short = figure(window)
    assert WINDOW_PARAM not in json.dumps(short.spec) and _filters(short.spec)[0] == ROW_FILTER
    assert "at a time" not in short.caption
    data = AltData(sentence_tables(typed_sentence(raw)), window)
    assert "It shows positions" not in entry_of(key).alt(data)
    x = short.spec.get("encoding", {}).get("x") or short.spec["layer"][0]["encoding"]["x"]
    assert x["scale"]["domain"] == list(range(window))
