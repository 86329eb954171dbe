"""Captions: a page never repeats what an earlier caption said, and the definitions of what
a model's attention adds (soft-cap, windows, sinks, QK-norm, partial rotary) are stated in
the captions of the figures they change."""

from __future__ import annotations

import html
import re
from dataclasses import replace

from attnreport.charts.registry import entry_of, page_inputs, place
from attnreport.site import SiteOptions, assemble_site
from attnreport.site.context import without_repeats
from tests.fixtures.fake_results import fake_study, typed

SORTED = "At each layer the heads are sorted, so lines never cross."


def test_a_repeated_sentence_is_said_once_and_pointed_back_to():
    captions = [
        f"Self focus per layer. {SORTED}",
        f"First-token focus per layer. {SORTED}",
        f"Concentration per layer. {SORTED} Near 1 a head looks at one token.",
    ]
    assert without_repeats(captions, first_number=4) == [
        f"Self focus per layer. {SORTED}",
        "First-token focus per layer. Otherwise read it as Figure 4.",
        "Concentration per layer. Near 1 a head looks at one token. Otherwise read it as Figure 4.",
    ]


def test_captions_without_repeats_are_unchanged():
    captions = ["One thing. Another thing.", "A third thing; not split at semicolons."]
    assert without_repeats(captions) == captions
    assert without_repeats([]) == []


def test_no_page_of_a_built_site_repeats_a_caption_sentence():
    files = assemble_site(typed(fake_study(2)), SiteOptions(images=False))  # the real builders
    pages = [name for name in files if name.endswith(".html") and name != "404.html"]
    repeated = []
    for name in pages:
        text = files[name].decode()
        seen: set[str] = set()
        for caption in re.findall(r"<figcaption[^>]*>(.*?)</figcaption>", text, flags=re.S):
            plain = html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", caption))).strip()
            for sentence in re.split(r"(?<=[.!?])\s+(?=[A-Z])", plain):
                if len(sentence) > 30 and "Figure" not in sentence:
                    repeated += [(name, sentence)] if sentence in seen else []
                    seen.add(sentence)
    assert pages and not repeated, repeated


def _results_with(*features: str):
    results = typed(fake_study(1))
    model = replace(results.manifest.model, features=tuple(features))
    return replace(results, manifest=replace(results.manifest, model=model))


def test_feature_definitions_appear_only_for_models_that_have_the_feature():
    plain = _results_with()
    modern = _results_with("softcap", "sliding_window", "sinks", "qk_norm", "partial_rotary")
    for key in ("attention-map", "attention-breakdown"):
        entry = entry_of(key)

        def build(results, entry=entry):  # as a page builds it: through its registry entry
            return place(entry, page_inputs(results, 0)).figure

        notes = [text for _, text in entry.notes]
        assert not any(note in build(plain).caption for note in notes), key
        caption = build(modern).caption
        assert all(note in caption for note in notes), key
        assert caption.count("soft-cap") == 1, caption


def test_a_caption_points_back_only_to_a_figure_of_its_kind():
    captions = [f"Lines. {SORTED}", f"A grid. {SORTED}", f"More lines. {SORTED}"]
    kinds = ["lines", "grid", "lines"]
    assert without_repeats(captions, first_number=1, kinds=kinds) == [
        f"Lines. {SORTED}",
        f"A grid. {SORTED}",  # another kind: said again, never "read it as Figure 1"
        "More lines. Otherwise read it as Figure 1.",
    ]


FIGURE = re.compile(
    r'<figure class="ar-figure" id="figure-(\d+)">\s*<div class="ar-chart" id="[^"]*" '
    r'data-key="([^"]+)".*?<figcaption>(.*?)</figcaption>',
    flags=re.S,
)
READ_AS = re.compile(r"read it as Figure (?:S\d+\.)?(\d+)\.")


def test_every_read_it_as_in_the_example_names_a_figure_of_that_kind():
    """Each "read it as Figure X" of every committed example page resolves to a figure of
    that page drawn the same way (its registry entry's kind) as the one it captions."""
    from pathlib import Path

    site = Path(__file__).resolve().parent.parent / "site"
    checked = 0
    for page in sorted(site.rglob("*.html")):
        figures = {int(n): (key, caption) for n, key, caption in FIGURE.findall(page.read_text())}
        for number, (key, caption) in figures.items():
            for target in READ_AS.findall(caption):
                other = figures[int(target)][0]
                assert int(target) < number, (page.name, number)
                assert entry_of(other).kind == entry_of(key).kind, (page.name, key, other)
                checked += 1
    assert checked >= 10
