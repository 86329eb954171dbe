"""A hybrid's report, end to end: its attention layers analysed, the other blocks "not attention".

A tiny random Qwen3-Next (no download) of 5 blocks, linear attention in blocks 0, 2 and 4
and full attention in blocks 1 and 3, is built with ``attnreport build``. Every per-layer
number is indexed by block: the tables have rows for blocks 1 and 3 only, and they match
transformers' own ``output_attentions`` of those layers; the charts drawn against layer
span all 5 blocks and band blocks 0, 2 and 4 as "not attention", which the captions and
the model card name too; the interventions ran at block 3, replaying the real blocks
before it (a linear-attention block among them), and a Q scaled to ~0 there gives uniform
causal attention. Tolerances: the written scores are rounded to 6 significant digits and
the observed probabilities to 6 places, so 1e-4 on probabilities.
"""

from __future__ import annotations

import html
import re

import numpy as np
import pytest
import torch
from click.testing import CliRunner

from attnreport.cli import main
from attnreport.interventions import identity, run_modified, scale
from attnreport.models import load_model
from attnreport.models.families import family_for
from attnreport.models.layout import discover
from attnreport.results import load
from tests.browser import ALL_DRAWN, DRAW_MS
from tests.html_scan import scan
from tests.test_hybrids import HYBRIDS
from tests.zoo_models import build_zoo_model, save_zoo_model

KINDS = ["linear_attention", "full_attention", "linear_attention", "full_attention"]
KINDS = [*KINDS, "linear_attention"]
ATTENTION, OTHERS = [1, 3], [0, 2, 4]
SENTENCES = "the cat sat on the mat\nthe dog ran to the park\nthe cat ran\n"
TOL = 1e-4  # the tables' probabilities (computed in float32 before any rounding)
MAP_RTOL = 1.0006e-3  # probabilities derived from scores kept at 3 decimals: (e^1e-3 - 1) p


def hybrid_folder(directory):
    """The tiny 5-block Qwen3-Next saved like a user's local model."""
    return save_zoo_model("qwen3_next", directory, num_hidden_layers=5, layer_types=KINDS)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(model folder, site folder) of ``attnreport build`` on the hybrid, intervening at 3."""
    root = tmp_path_factory.mktemp("hybrid")
    folder = hybrid_folder(root / "model")
    (root / "s.txt").write_text(SENTENCES)
    args = ["build", "--model", str(folder), "--sentences", str(root / "s.txt")]
    args += ["--intervene-layer", "3", "--no-images", "--out", str(root / "site")]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    return folder, root / "site"


def own_attentions(folder, token_ids) -> list[np.ndarray]:
    """transformers' eager ``output_attentions``: one (head, query, key) per attention layer."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(folder), attn_implementation="eager").eval()
    with torch.no_grad():
        out = model(input_ids=torch.tensor([token_ids]), output_attentions=True, use_cache=False)
    return [a[0].double().numpy() for a in out.attentions]


def page_text(path, leave_out: str | None = None) -> str:
    """A page's visible text, whitespace collapsed; ``leave_out``: a pattern of its HTML
    (a section) dropped first."""
    body = re.sub(r"<script.*?</script>", " ", path.read_text(), flags=re.S)
    if leave_out is not None:
        body = re.sub(leave_out, " ", body, flags=re.S)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", body)))


@pytest.mark.slow
def test_tables_hold_the_attention_layers_by_block_and_match_output_attentions(built):
    folder, site = built
    results = load(site / "results")
    assert [f.attention for f in results.manifest.model.layers] == [False, True, False, True, False]
    assert results.manifest.model.n_layers == 5
    for listed, sentence in zip(results.manifest.sentences, results.sentences, strict=True):
        own = own_attentions(folder, listed.token_ids)
        assert len(own) == len(ATTENTION)
        assert sentence.attention.layer_numbers == tuple(ATTENTION)
        focus = sentence.tables.focus.arrays()
        assert sorted(set(focus["layer"].tolist())) == ATTENTION  # no rows for the others
        for index, layer in enumerate(ATTENTION):
            maps = np.array(sentence.attention.probs[index], dtype=object)
            for head, triangle in enumerate(maps):
                for query, row in enumerate(triangle):
                    expected = own[index][head, query, : query + 1]
                    np.testing.assert_allclose(
                        np.array(row, float), expected, atol=1e-6, rtol=MAP_RTOL
                    )
            rows = focus["layer"] == layer
            first_prob = own[index][:, 1:, 0].mean(1)  # Gu et al.'s head score over i >= 1
            np.testing.assert_allclose(focus["first_prob"][rows], first_prob, atol=TOL, rtol=0)


@pytest.mark.slow
def test_interventions_ran_at_the_attention_layer(built):
    folder, site = built
    results = load(site / "results")
    iv = results.interventions
    assert iv.layer == 3 and dict(iv.observed_layers) == {"same": 3, "next": 3, "last": 3}
    token_ids = results.manifest.sentences[iv.scaling.sentence].token_ids
    own = own_attentions(folder, token_ids)[ATTENTION.index(3)]
    for head, triangle in enumerate(iv.scaling.baseline["same"]):
        for query, row in enumerate(triangle):
            np.testing.assert_allclose(row, own[head, query, : query + 1], atol=TOL, rtol=0)
    tiny_q = next(c for c in iv.scaling.shown if c.target == "QK" and c.setting == 1e-10)
    for triangle in tiny_q.observations["same"]:  # ~0 queries: uniform over the allowed keys
        for query, row in enumerate(triangle):
            np.testing.assert_allclose(row, np.full(query + 1, 1 / (query + 1)), atol=TOL)
    # layer 3 is the last attention layer: the V check reads its own weights and names no
    # later layer to have moved (there is none to show it)
    index = page_text(site / "index.html")
    check = index.split("Scaling V leaves its own layer's attention weights unchanged")[1]
    check = check.split("See the figure")[0]
    assert "V scaled by 1e-10 in layer 3" in check and "own weights do not move" in check, check
    assert "layer 4" not in check, check


@pytest.mark.slow
def test_layer_axes_card_and_captions_name_the_other_blocks(built):
    _, site = built
    index = site / "index.html"
    text = page_text(index)
    assert "Not attention every other layer from 0 to 4 (no attention)" in text  # the card
    assert "Every other layer from 0 to 4 is not attention (grey on a layer axis)" in text
    for key in ("set-first-focus", "set-self-focus", "set-concentration", "set-sink-rate"):
        spec = scan(index.read_text()).json_scripts[f"ar-data-{key}"]["spec"]
        bands = [
            v["layer"]
            for data in spec["data"]
            for v in data.get("values", [])
            if isinstance(v, dict) and v.get("kind") == "not attention"
        ]
        assert bands == OTHERS, key
        x = next(s for s in spec["scales"] if s["name"] == "x")
        assert x["domain"] == [0, 4], key  # the axis spans every block
    sentence_page = next(site.glob("s000-*.html"))
    assert "Every other layer from 0 to 4 is not attention" in page_text(sentence_page)
    # No finding or label names another block. The claims section quotes each source's own
    # scope ("layers 4 and later" of the source's model), so it is left out of this scan.
    for path in (index, sentence_page):
        page = page_text(path, leave_out=r'<section id="claims">.*?</section>')
        assert not re.findall(r"\blayers? [024]\b(?! and later)", page)  # a source's scope


def test_replay_runs_the_real_blocks_before_the_layer(tmp_path):
    """At block 3, the unmodified pass gives the model's own logits and attention, and a
    pass that replays blocks 0-2 (a linear-attention block among them) equals one that
    recomputes them."""
    loaded = load_model(str(hybrid_folder(tmp_path / "model")))
    model, specs = loaded.model, discover(loaded.family, loaded.model)
    assert [s.layer for s in specs] == ATTENTION
    ids = torch.tensor([2, 4, 8, 9, 2, 10])
    with torch.no_grad():
        own = model(input_ids=ids[None], output_attentions=True, use_cache=False)
    base = run_modified(model, specs, ids, 3, identity, (3,))
    torch.testing.assert_close(base.probs[3], own.attentions[1][0], atol=1e-5, rtol=0)
    expected = torch.log_softmax(own.logits[0].float(), -1)
    torch.testing.assert_close(base.log_probs, expected, atol=1e-5, rtol=0)
    full = run_modified(model, specs, ids, 3, scale("K", 1e-3), (3,))
    replayed = run_modified(model, specs, ids, 3, scale("K", 1e-3), (3,), base.prefix)
    torch.testing.assert_close(replayed.probs[3], full.probs[3], atol=1e-6, rtol=0)
    torch.testing.assert_close(replayed.log_probs, full.log_probs, atol=1e-6, rtol=0)


def test_intervening_at_a_block_without_attention_is_refused_in_one_line(tmp_path):
    folder = hybrid_folder(tmp_path / "model")
    (tmp_path / "s.txt").write_text(SENTENCES)
    args = ["analyze", "--model", str(folder), "--sentences", str(tmp_path / "s.txt")]
    args += ["--intervene-layer", "2", "--out", str(tmp_path / "results")]
    result = CliRunner().invoke(main, args)
    assert result.exit_code != 0 and "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if "not attention" in line]
    assert len(lines) == 1 and "intervention layer 2 is not attention" in lines[0]
    assert "attention layers are 1 and 3" in lines[0]
    assert not (tmp_path / "results" / "manifest.json").exists()


@pytest.mark.slow
@pytest.mark.browser
def test_pages_draw_the_bands_and_offer_attention_layers_only(built, offline_page):
    """In Chromium: every chart draws without errors; the set's first-token chart draws a
    "not attention" label for each other block; a sentence page's layer widget offers the
    attention layers 1 and 3 only."""
    _, site = built
    page = offline_page.page
    for path in sorted(site.glob("*.html")):
        if path.name == "404.html":
            continue
        page.goto(path.as_uri())
        page.wait_for_function(ALL_DRAWN, timeout=DRAW_MS)
        errored = page.evaluate(
            "() => [...document.querySelectorAll('.ar-chart')]"
            ".filter(el => el.dataset.rendered === 'error').length"
        )
        assert errored == 0, path.name
    page.goto((site / "index.html").as_uri())
    page.wait_for_function(ALL_DRAWN, timeout=DRAW_MS)
    labels = page.evaluate(
        """() => [...document.querySelectorAll('.ar-chart svg text')]
            .filter(t => t.textContent === 'not attention').length"""
    )
    assert labels >= len(OTHERS) * 4  # first-token, self-token, concentration, sink rate
    page.goto(next(site.glob("s000-*.html")).as_uri())
    page.wait_for_function(ALL_DRAWN, timeout=DRAW_MS)
    options = page.evaluate(
        """() => [...document.querySelectorAll('select')]
            .filter(s => s.name === 'layer' || (s.parentElement.textContent || '').includes('layer'))
            .map(s => [...s.options].map(o => o.value))"""
    )
    assert options and all(o == ["1", "3"] for o in options), options
    assert offline_page.errors == []


@pytest.mark.slow
@pytest.mark.parametrize("model_type", HYBRIDS)
def test_every_hybrid_intervenes_at_its_last_attention_layer(model_type):
    """On each tiny hybrid of the issue's list: at its last attention layer, the unmodified
    pass gives the model's own next-token distribution and that layer's own attention
    (``output_attentions``), and replaying the blocks before it (those without attention
    among them) equals recomputing them."""
    model, why = build_zoo_model(model_type)
    assert model is not None, why
    specs = discover(family_for(model_type), model)
    layer = specs[-1].layer
    ids = torch.arange(1, 9)
    with torch.no_grad():
        own = model(input_ids=ids[None], output_attentions=True, use_cache=False)
    attentions = [a for a in own.attentions if a is not None]
    base = run_modified(model, specs, ids, layer, identity, (layer,))
    torch.testing.assert_close(base.probs[layer], attentions[-1][0], atol=1e-5, rtol=0)
    expected = torch.log_softmax(own.logits[0].float(), -1)
    torch.testing.assert_close(base.log_probs, expected, atol=1e-5, rtol=0)
    full = run_modified(model, specs, ids, layer, scale("V", 1e-3), (layer,))
    replayed = run_modified(model, specs, ids, layer, scale("V", 1e-3), (layer,), base.prefix)
    torch.testing.assert_close(replayed.log_probs, full.log_probs, atol=1e-6, rtol=0)
    assert float((full.log_probs - base.log_probs).abs().max()) > 1e-4  # V at ~0 moves it
