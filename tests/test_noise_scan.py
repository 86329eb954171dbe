"""The scanner that keeps noise out of the findings flags what issue 39 found and passes
the quantifiers and bounds a finding may use."""

from __future__ import annotations

from tests.noise_scan import finding_text, stated_noise


def test_it_flags_each_kind_of_noise_the_referee_found():
    found = [
        "It departs most from the other sentences in the first-token focus of layer 2.",
        "Layer 0, head 7 varies most between sentences: 0% to 90%.",
        "The models differ most in sink rate, at depth 0.03.",
        "Heads change the hidden state most in layer 0.",
        "The strongest self-focus head is layer 11, head 6.",
        "0.898 on its 3 full-attention layers",
        "(Gemma-3-270M: interpolated between its layers 0 and 1)",
        "Scaling V by 0.5 moves it only 1.4e-8 nats.",
    ]
    assert [len(stated_noise(t)) for t in found] == [1] * len(found)


def test_it_passes_quantifiers_bounds_and_plain_numbers():
    fine = [
        "In layers 2-9 most heads make it the top key for most queries.",
        "Its weights move at most 0.0049; the next-token distribution moves 0.35 nats.",
        "The first token is the top key for more than half of its queries in most layers.",
        "first-token focus is a median 0.73 on them against 0.9 on its 12 full-attention layers",
    ]
    assert [stated_noise(t) for t in fine] == [[] for _ in fine]


def test_finding_text_keeps_the_findings_and_leaves_out_figures_and_the_grids():
    html = (
        '<div class="lede"><p>Lede one.</p></div><section id="findings"><p>Found.</p>'
        "<figure><figcaption>Caption most.</figcaption></figure></section>"
        '<section id="interventions"><p>Scaling V changes it most.</p></section>'
        '<section id="about"><p>About.</p></section><script>var most;</script>'
    )
    assert finding_text(html).split() == ["Lede", "one.", "Found."]


def test_no_page_of_the_example_states_noise_as_a_finding():
    """Every page of the committed example: its lede, key findings, set-wide text, claims,
    sentence parts and the comparison's findings state no maximum picked from a list, no
    interpolated value, no contrast over too few units and no number below float32."""
    from pathlib import Path

    site = Path(__file__).resolve().parent.parent / "site"
    pages = sorted(site.rglob("*.html"))
    assert len(pages) >= 9  # the comparison, two model indexes, three pages each, 404
    said = {
        p.relative_to(site).as_posix(): finding_text(p.read_text(encoding="utf-8")) for p in pages
    }
    assert all(len(text) > 100 for name, text in said.items() if name != "404.html")
    noise = {name: stated_noise(text) for name, text in said.items()}
    assert {name: found for name, found in noise.items() if found} == {}
