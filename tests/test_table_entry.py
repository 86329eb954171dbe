"""A new table is its class, its field in the results type and the analysis that fills
it: a toy sentence table and a toy set table pooled from it, declared here alone (the
fields added by subclassing the results types, as a new table adds them to
``results/types.py``), are computed by a real corpus run, written, read back, and pooled
over the corpus exactly, in any split of it; the results schema's listing follows."""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import AutoModelForCausalLM

from attnreport.analyses import layer_tables
from attnreport.analyses.layer_tables import fills
from attnreport.analyses.tables import Table
from attnreport.config import load_settings
from attnreport.corpus import run_corpus
from attnreport.corpus.partial import SentencePartial, SetPartial
from attnreport.docs import with_schema_tables
from attnreport.records import LayerRecord
from attnreport.results import CURRENT, load, types
from attnreport.results.columns import Float, Int, _table
from attnreport.results.columns import Table as ResultsTable
from attnreport.results.tables import PooledTable
from tests.test_corpus_run import write_corpus


@_table("first_token")
class FirstTokenTable(ResultsTable):
    """Per layer, head and query i >= 1: p_i0, the probability on the first token."""

    layer: Int
    head: Int
    query: Int
    first_prob: Float


@_table("first_token_pooled")
class FirstTokenPooledTable(PooledTable):
    """Per (layer, head): p_i0 averaged over every query i >= 1 of every sentence."""

    POOLS = "first_token"
    layer: Int
    head: Int
    first_prob: Float
    n_rows: Int


def first_token_rows(record: LayerRecord) -> Table:
    """The analysis: one layer's rows of ``first_token`` from its probs (head, query, key)."""
    n_heads, n = record.probs.shape[:2]
    heads, queries = np.meshgrid(np.arange(n_heads), np.arange(1, n), indexing="ij")
    return {
        "layer": np.full(heads.size, record.layer),
        "head": heads.reshape(-1),
        "query": queries.reshape(-1),
        "first_prob": record.probs[:, 1:, 0].double().numpy().reshape(-1),
    }


@dataclass(frozen=True, eq=False)
class WithFirstToken(types.SentenceTables):
    first_token: FirstTokenTable | None = None  # None: a sentence captured blockwise


@dataclass(frozen=True, eq=False)
class SetWithFirstToken(types.SetResults):
    first_token_pooled: FirstTokenPooledTable | None = None


@pytest.fixture
def toy_table(monkeypatch):
    """The toy table's two fields and its registered analysis, for this test only."""
    monkeypatch.setattr(types, "SentenceTables", WithFirstToken)
    monkeypatch.setattr(types, "SetResults", SetWithFirstToken)
    fills(FirstTokenTable)(first_token_rows)
    yield
    layer_tables.ANALYSES.pop(FirstTokenTable)


def test_the_table_kinds_follow_from_the_fields(toy_table):
    assert list(types.table_kinds(types.SentenceTables))[-1] == "first_token"
    assert types.pooled_kinds() == {"first_token_pooled": FirstTokenPooledTable}
    assert FirstTokenPooledTable.means_of() == ("first_prob",)
    doc = (Path(__file__).resolve().parents[1] / "docs" / "results-schema.md").read_text()
    listed = with_schema_tables(doc)  # what ``python -m attnreport.docs`` would write
    assert '    "first_token":  layer, head, query, first_prob\n' in listed
    assert '    "first_token_pooled": layer, head, first_prob, n_rows\n' in listed


def test_a_new_table_is_written_read_back_and_pooled_over_a_corpus(
    toy_table, tmp_path, tiny_model_dirs
):
    model_dir = str(tiny_model_dirs["llama"])
    corpus = write_corpus(tmp_path / "c.txt", 4)
    settings = load_settings(
        None, {"model": model_dir, "sentences": str(corpus), "out": str(tmp_path / "r")}
    )
    run_corpus(settings)
    results = load(tmp_path / "r")  # read back through the results types
    model = AutoModelForCausalLM.from_pretrained(model_dir, attn_implementation="eager")
    rows: dict[tuple[int, int], list[float]] = {}
    for listed, sentence in zip(results.manifest.sentences, results.sentences, strict=True):
        table = sentence.tables.first_token
        assert isinstance(table, FirstTokenTable) and len(table) > 0
        with torch.no_grad():  # the model's own attention weights: the independent numbers
            attentions = model(torch.tensor([listed.token_ids]), output_attentions=True).attentions
        want = [float(attentions[k][0, h, i, 0]) for k, h, i in
                zip(table.layer, table.head, table.query, strict=True)]  # fmt: skip
        np.testing.assert_allclose(table.first_prob, want, rtol=1e-5, atol=1e-7)
        for k, h, p in zip(table.layer, table.head, table.first_prob, strict=True):
            rows.setdefault((int(k), int(h)), []).append(float(p))
    pooled = results.set.first_token_pooled
    assert isinstance(pooled, FirstTokenPooledTable)
    assert list(zip(pooled.layer.tolist(), pooled.head.tolist(), strict=True)) == sorted(rows)
    assert pooled.n_rows.tolist() == [len(rows[key]) for key in sorted(rows)]
    means = [np.mean(rows[key]) for key in sorted(rows)]  # of rows written to 6 digits
    np.testing.assert_allclose(pooled.first_prob, means, rtol=1e-5)  # itself written to 6


def test_the_pooled_table_is_the_same_in_any_split_of_the_corpus(
    toy_table, tmp_path, tiny_model_dirs
):
    """The partial sums a run keeps for resuming carry the toy table's source rows: merged
    in two halves, in either order, they give the table the run wrote, bit for bit."""
    corpus = write_corpus(tmp_path / "c.txt", 4, seed=1)
    out = tmp_path / "r"
    settings = load_settings(
        None, {"model": str(tiny_model_dirs["llama"]), "sentences": str(corpus), "out": str(out)}
    )
    run_corpus(settings)
    parts = [
        SentencePartial.from_json(json.loads((out / f"partials/{i:03d}.json").read_text()))
        for i in range(4)
    ]
    assert all("first_token_pooled" in p.pooled for p in parts)
    written = json.loads(gzip.decompress((out / CURRENT.set).read_bytes()))
    for order in ((0, 1), (1, 0)):
        halves = [SetPartial(), SetPartial()]
        for i, part in enumerate(parts):
            halves[i // 2].add(part)
        total = SetPartial()
        for h in order:
            total.merge(halves[h])
        table = types.set_to_json(total.set_results())["tables"]["first_token_pooled"]
        assert table == written["tables"]["first_token_pooled"]
