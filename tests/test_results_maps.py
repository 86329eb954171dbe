"""Schema version 3 keeps the attention scores (plus sink logits and rank fixes) and derives
probabilities and ranks when read; version 1 and 2 folders, which stored them, still load.

Derived probabilities are checked against the model's own (the capture's), ranks against
the analysis' ``KeyOrder``, on tiny random-weight models: Llama (plain causal), Mistral
(a sliding window: masked cells inside the triangle), Gemma 2 (soft-capping and a window)
and gpt-oss (learned sinks and a window).
"""

from __future__ import annotations

import itertools
import json
import pickle
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from click.testing import CliRunner

from attnreport.analyses import key_order
from attnreport.analyses.tables import triangle
from attnreport.attention import layer_record
from attnreport.capture import capture_attention
from attnreport.cli import main
from attnreport.config import Settings
from attnreport.models import load_model
from attnreport.models.layout import discover
from attnreport.output import write_site
from attnreport.results import CURRENT, Layout, dump, load, read_json
from attnreport.results.compare import compare_results
from attnreport.results.io import dump_json, dump_json_streamed
from attnreport.results.layout import MANIFEST, compress, decode
from attnreport.results.maps import (
    AttentionMaps,
    FlatTriangle,
    _score_codes,
    as_triangle_list,
    ascending_keys,
    flat,
    layer_ranks,
    rank_fixes,
    row_ranks,
    triangle_index,
)
from attnreport.results.rounding import column_to_list
from attnreport.results.ties import Tolerance, _row_ties, map_tolerance
from attnreport.results.types import sentence_to_json
from attnreport.sentence_pass import analyze_pass

TEXT = "the cat chased the mouse and the dog sat on the mat"
# Derived p from scores rounded to SCORE_PLACES = 3 decimals (schema 9: |ds| <= 5e-4) and
# the model's float32 softmax: p changes by a factor within exp(+-2 |ds|), so
# |dp| <= (exp(1e-3) - 1) p, plus float32 rounding.
RTOL, ATOL = 1.0006e-3, 1e-6


def tiny(tiny_model_dirs, family):
    loaded = load_model(str(tiny_model_dirs[family]))
    ids = torch.tensor(loaded.tokenizer(TEXT).input_ids)
    return loaded.model, discover(loaded.family, loaded.model), ids


def close(got, want) -> bool:
    return bool(np.all(np.abs(np.asarray(got) - want) <= ATOL + RTOL * np.abs(want)))


@pytest.mark.parametrize("family", ["llama", "mistral", "gemma2", "gpt_oss"])
def test_derived_probs_and_ranks_equal_the_capture(tiny_model_dirs, family):
    model, specs, ids = tiny(tiny_model_dirs, family)
    _, maps = analyze_pass(model, specs, ids, Settings(map_tokens=len(ids)))
    assert maps is not None
    without_sinks = AttentionMaps(maps.scores, None, maps.rank_fixes)
    capture = capture_attention(model, specs, ids)
    sink_gap, masked, n = 0.0, 0, len(ids)
    for spec, raw in zip(specs, capture.raw, strict=True):
        record = layer_record(spec, raw, with_terms=False)
        ranks = key_order(record.scores, record.allowed).ranks
        probs = record.probs.double().numpy()
        masked += int((~record.allowed).tril().sum())
        for head in range(record.n_heads):
            for q in range(n):
                want = probs[head, q, : q + 1]
                assert close(maps.probs[spec.layer][head][q], want), (spec.layer, head, q)
                assert maps.ranks[spec.layer][head][q] == ranks[head, q, : q + 1].tolist()
                gap = np.abs(np.array(without_sinks.probs[spec.layer][head][q]) - want).max()
                sink_gap = max(sink_gap, float(gap))
        if family == "gemma2":  # the cap bends these scores: the maps hold the capped ones
            assert record.softcap is not None
            assert not torch.allclose(record.logits[:, record.allowed], record.scores[:, record.allowed])  # fmt: skip
    assert (maps.sinks is not None) == (family == "gpt_oss")
    assert (sink_gap > 1e-3) == (family == "gpt_oss")  # ignoring the sink would be wrong
    assert (masked > 0) == (family != "llama")  # a window masks cells inside the triangle
    assert any(v is None for layer in maps.scores for h in layer for row in h for v in row) == (
        masked > 0
    )


def test_rank_fixes_keep_the_order_that_rounding_ties():
    """Two scores equal after rounding to 6 digits but ordered the other way before it: the
    results keep those keys' ranks; an exact tie goes to the lower key and needs no fix. A
    fix as schema 10 wrote it (the whole row) reads as the same keys."""
    scores = torch.full((1, 3, 3), -torch.inf, dtype=torch.float64)
    scores[0, 0, 0] = 0.5
    scores[0, 1, :2] = torch.tensor([1.0000001, 1.0000004])
    scores[0, 2, :] = torch.tensor([2.0, -1.0, 2.0])
    allowed = torch.ones(3, 3, dtype=torch.bool).tril()
    ranks = key_order(scores, allowed).ranks.numpy()
    tri = triangle(scores[0].numpy())
    assert tri[1] == [1.0, 1.0]
    fixes = rank_fixes(4, [tri], ranks)
    assert fixes == {(4, 0, 1): ((0, 1), (1, 0))}
    plain = AttentionMaps([[tri]])
    assert plain.ranks[0][0] == [[0], [0, 1], [0, 2, 1]]
    maps = AttentionMaps([[tri]], rank_fixes={(0, 0, 1): ((0, 1), (1, 0))})
    assert maps.ranks[0][0] == [[0], [1, 0], [0, 2, 1]]
    written = json.loads(json.dumps(maps.to_json()))
    assert written["rank_fixes"] == [[0, 0, 1, [0, 1], [1, 0]]]
    back = AttentionMaps.from_json(written)
    assert back.ranks == maps.ranks and back.to_json() == maps.to_json()
    old = AttentionMaps.from_json(
        {**written, "rank_fixes": [[0, 0, 1, [1, 0]], [0, 0, 2, [0, 2, 1]]]}
    )
    assert old.rank_fixes == maps.rank_fixes  # row 2's ranks are the written scores' own


@pytest.mark.parametrize("window", [None, 3])
def test_rank_fixes_are_the_keys_whose_written_scores_rank_otherwise(window):
    """Against ranking every written row again (``row_ranks``): scores drawn from a few
    values plus perturbations below the 6th digit tie often after rounding, exact ties
    included; a window masks cells inside the triangle."""
    n, heads = 12, 3
    gen = torch.Generator().manual_seed(7)
    base = torch.randint(0, 4, (heads, n, n), generator=gen).double()
    noise = torch.randint(0, 3, (heads, n, n), generator=gen).double() * 1e-8
    scores = base + noise
    allowed = torch.ones(n, n, dtype=torch.bool).tril()
    if window is not None:
        allowed &= ~torch.ones(n, n, dtype=torch.bool).tril(-window)
    order = key_order(scores, allowed)
    tris = [triangle(head.numpy(), allowed.numpy()) for head in scores]
    fixes = rank_fixes(0, tris, order.ranks.numpy(), order.order.numpy())
    expected = {}
    for head, tri in enumerate(tris):
        rows, keys, _ = triangle_index(n)
        true = order.ranks[head].numpy()[rows, keys]
        derived = row_ranks(rows, keys, flat(tri))
        for query in np.unique(rows[derived != true]).tolist():
            cells = np.flatnonzero((rows == query) & (derived != true))
            fixed = (tuple(keys[cells].tolist()), tuple(true[cells].tolist()))
            expected[(0, head, query)] = fixed
    assert fixes == expected and len(expected) > 3  # the case is not vacuous
    assert rank_fixes(0, tris, order.ranks.numpy()) == expected  # order derived from ranks


@pytest.mark.parametrize("thousandths", [True, False])
@pytest.mark.parametrize("seed", range(4))
def test_a_layers_ranks_at_once_are_each_rows_ranks(seed, thousandths):
    """``layer_ranks`` (every head in one sort) against ``row_ranks`` (a lexsort of each
    head's cells): scores from a few values, so rows hold exact ties, -0.0 beside 0.0,
    and NaN where a window masks a cell; ties go to the lower key, masked cells rank -1.
    Scores in whole thousandths (as the results keep them) take the integer sort, others
    (thirds) the float sort."""
    gen = np.random.default_rng(seed)
    n, heads = int(gen.integers(1, 40)), 3
    rows, keys, _ = triangle_index(n)
    scores = gen.integers(-2, 3, (heads, len(rows))).astype(float) / (2 if thousandths else 3)
    scores[scores == 0] *= gen.choice([-1.0, 1.0], (scores == 0).sum())  # some -0.0
    scores[:, rows - keys >= 4] = np.nan  # a window of 4
    scores[0, 0] = 0.5 if thousandths else 1 / 3  # row 0's one cell: never masked
    assert (_score_codes(scores, np.isnan(scores)) is not None) == thousandths
    got = layer_ranks(scores, n)
    for head in range(heads):
        assert got[head].tolist() == row_ranks(rows, keys, scores[head]).tolist()


def test_ascending_keys_is_the_stable_argsort_and_refuses_keys_that_would_overflow():
    gen = np.random.default_rng(0)
    primary = gen.integers(0, 4, (3, 5, 33))  # ties everywhere
    assert np.array_equal(ascending_keys(primary), np.argsort(primary, axis=-1, kind="stable"))
    with pytest.raises(ValueError, match="primaries"):
        ascending_keys(np.array([[1, -1]]))
    with pytest.raises(ValueError, match="primaries"):
        ascending_keys(np.array([[2**62, 0, 0]]))  # 2 bits of key index leave 61


def analyze(out: Path, model: Path, sentences: Path) -> Path:
    args = ["analyze", "--out", str(out), "--model", str(model), "--sentences", str(sentences)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    return out


def as_version_2(folder: Path, out: Path) -> Path:
    """The folder as version 2 wrote it: stored probs (6 digits) and ranks, no sinks or
    rank fixes, table columns as plain arrays, plain ``.json`` files."""
    results = load(folder)
    v2 = Layout(2)
    files = {}
    parts = [(CURRENT.set, v2.set), (CURRENT.interventions, v2.interventions)]
    parts += [(CURRENT.sentence(s.index), v2.sentence(s.index)) for s in results.sentences]
    for name, old in parts:
        value = read_json(folder / name)
        value["schema"] = "attnreport.results/2"
        files[old] = value
    for s in results.sentences:
        value = files[v2.sentence(s.index)]
        att = s.attention
        probs = [[triangle(np.array(_square(t))) for t in heads] for heads in att.probs]
        nested = [[as_triangle_list(t) for t in heads] for heads in att.scores]
        ranks = [[as_triangle_list(t) for t in heads] for heads in att.ranks]
        value["attention"] = {"scores": nested, "probs": probs, "ranks": ranks}
        value["tables"] = {n: _plain(getattr(s.tables, n)) for n in value["tables"]}
        value["tokens"] = _plain(s.tokens)
    files[v2.set]["tables"] = {n: _plain(getattr(results.set, n)) for n in files[v2.set]["tables"]}
    data = {name: dump_json(value) for name, value in files.items()}
    manifest = json.loads((folder / MANIFEST).read_bytes())
    manifest["schema"] = "attnreport.results/2"
    manifest["files"] = {name: len(b) for name, b in sorted(data.items())}
    return write_site({**data, MANIFEST: dump_json(manifest)}, out)


def listed(folder: Path) -> dict[str, bytes]:
    """The manifest and the files it lists (not ``run.json`` or ``partials/``)."""
    names = [MANIFEST, *json.loads((folder / MANIFEST).read_bytes())["files"]]
    return {name: (folder / name).read_bytes() for name in names}


def _square(tri: list[list[float]]) -> np.ndarray:
    out = np.zeros((len(tri), len(tri)))
    for i, row in enumerate(tri):
        out[i, : i + 1] = row
    return out


def _plain(table) -> dict:
    return {"columns": {n: column_to_list(v) for n, v in table.arrays().items()}}


@pytest.fixture
def sentences(tmp_path):
    path = tmp_path / "two.txt"
    path.write_text("the cat chased the mouse and the dog\nthe dog sat on the mat\n")
    return path


@pytest.mark.parametrize("family", ["llama", "gpt_oss"])
def test_a_version_2_folder_loads_with_the_same_maps(tmp_path, tiny_model_dirs, sentences, family):
    current = analyze(tmp_path / "current", tiny_model_dirs[family], sentences)
    v2 = as_version_2(current, tmp_path / "v2")
    old, new = load(v2), load(current)
    for a, b in zip(old.sentences, new.sentences, strict=True):
        assert set(read_json(current / CURRENT.sentence(b.index))["attention"]) == (
            {"parts", "rank_fixes", "sinks"} if family == "gpt_oss" else {"parts", "rank_fixes"}
        )
        assert a.attention.ranks == b.attention.ranks
        for la, lb in zip(a.attention.probs, b.attention.probs, strict=True):
            for ta, tb in zip(la, lb, strict=True):
                assert close(np.concatenate(ta), np.concatenate(tb))
        if family == "gpt_oss":  # recovered from the stored probabilities
            assert np.allclose(a.attention.sinks, b.attention.sinks, rtol=1e-4)
    assert compare_results(old, new).ok
    result = CliRunner().invoke(main, ["compare", str(v2), str(current)])
    assert result.exit_code == 0, result.output
    files = listed(current)
    if family == "llama":  # without sinks, nothing is recovered: current bytes again
        assert dump(old) == files  # compressed by this process's zlib both times


def test_dump_load_dump_and_streaming_are_byte_identical(tmp_path, tiny_model_dirs, sentences):
    current = analyze(tmp_path / "current", tiny_model_dirs["gpt_oss"], sentences)
    files = listed(current)
    results = load(current)
    assert dump(results) == files
    for s in results.sentences:
        streamed = dump_json_streamed(sentence_to_json(s, lazy=True))
        name = CURRENT.sentence(s.index)
        stored = decode(files[name], name, name)
        assert bytes(streamed) == dump_json(sentence_to_json(s)) == stored


def test_malformed_rank_fixes_are_a_one_line_error(tmp_path, tiny_model_dirs, sentences):
    from attnreport.errors import AttnReportError
    from attnreport.results.io import parse_files, read_folder

    files = read_folder(analyze(tmp_path / "current", tiny_model_dirs["llama"], sentences))
    name = CURRENT.sentence(0)
    value = json.loads(decode(files[name], name, name))
    value["attention"]["rank_fixes"] = [[0, 0]]
    files[name] = compress(dump_json(value))
    manifest = json.loads(files[MANIFEST])
    manifest["files"][name] = len(files[name])
    files[MANIFEST] = dump_json(manifest)
    with pytest.raises(AttnReportError, match="000.json.gz: the attention maps are malformed"):
        parse_files(files, "r/")


def test_the_committed_example_keeps_its_maps_through_version_3():
    """The example's maps (SmolLM2: real near-ties), written in version 3
    and read back, give the ranks it holds exactly and its probabilities within the bound
    of 6-digit scores: |dp| <= p * (2 * 5e-6 * max|s| of the row + 5e-6)."""
    from attnreport.results.io import parse_files

    example = load(Path(__file__).parents[1] / "site" / "smollm2-135m-instruct" / "results")
    again = parse_files(dump(example))
    fixes = 0
    for a, b in zip(example.sentences, again.sentences, strict=True):
        assert b.attention.ranks == a.attention.ranks
        fixes += len(b.attention.rank_fixes)
        for la, lb, ls in zip(a.attention.probs, b.attention.probs, a.attention.scores, strict=True):  # fmt: skip
            for ta, tb, ts in zip(la, lb, ls, strict=True):
                for pa, pb, s in zip(ta, tb, ts, strict=True):
                    top = max(abs(v) for v in s if v is not None)
                    bound = np.array(pa) * (1e-5 * top + 5e-6) * 1.01 + 1e-12
                    assert np.all(np.abs(np.array(pb) - pa) <= bound)
    assert fixes > 0  # rounding ties some rows of the example in the other order


def test_the_rows_with_near_ties_are_found_row_by_row():
    """``ties._row_ties`` (every row of a head sorted at once) against the plain reading:
    a row nearly ties when two of its unmasked scores, sorted, are within the maps'
    tolerance. Scores at 3 decimals, some one unit apart, NaN where a window masks."""
    gen = np.random.default_rng(3)
    n = 9
    rows, keys, _ = triangle_index(n)
    heads = []
    for _ in range(3):
        values = np.round(gen.integers(0, 40, len(rows)) * 0.013, 3)
        values[rows - keys >= 5] = np.nan
        heads.append(FlatTriangle(values, n))
    maps = AttentionMaps([heads, [heads[1]]], layers=(2, 5))
    sentence = SimpleNamespace(attention=maps)
    tol = Tolerance(rtol=0.0, atol=1e-9)
    got = _row_ties(0, SimpleNamespace(sentences=[sentence]), tol)
    close = map_tolerance(tol).close
    expected = set()
    for layer, layer_heads in zip((2, 5), maps.scores, strict=True):
        for head, tri in enumerate(layer_heads):
            for query, row in enumerate(tri):
                values = sorted(v for v in row if v is not None)
                if any(close(a, b) for a, b in itertools.pairwise(values)):
                    expected.add((0, layer, head, query))
    assert got == expected and 0 < len(expected) < 3 * n + n  # neither none nor every row


def test_a_flat_triangle_reads_as_the_nested_rows_it_stands_for():
    """What a notebook reads of ``attention.scores``/``probs``/``ranks``: rows 0..n-1, row i
    with keys 0..i, NaN as None; equal to those lists; it survives pickling (Ray)."""
    values = np.array([0.5, 1.0, np.nan, 2.0, 3.0, 4.0])
    tri = FlatTriangle(values)
    nested = [[0.5], [1.0, None], [2.0, 3.0, 4.0]]
    assert len(tri) == 3 and tri.tolist() == nested and list(tri) == nested
    assert tri[1] == [1.0, None] and tri[-1] == [2.0, 3.0, 4.0] and tri[1:] == nested[1:]
    assert tri == nested and tri == FlatTriangle(values.copy()) and tri != nested[:2]
    assert pickle.loads(pickle.dumps(tri)) == tri and flat(tri) is tri.values
    ints = FlatTriangle(np.array([0, 1, 0]))
    assert ints.tolist() == [[0], [1, 0]] and type(ints[1][0]) is int
    with pytest.raises(IndexError):
        tri[3]
    with pytest.raises(ValueError, match="no causal triangle"):
        FlatTriangle(np.zeros(4))
