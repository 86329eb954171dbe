"""``--pages``: a corpus site where only some sentences have a page.

One 12-sentence corpus is analysed once with a tiny model (interventions on sentence 10,
so its page is kept whatever ``--pages`` says); sites are rendered from it with different
choices and compared with the site that has every page.
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from click.testing import CliRunner

from attnreport.cli import main
from tests.html_scan import link_problems, scan
from tests.test_corpus_run import write_corpus

COUNT = 12
IV = 10  # scaling_sentence: the page with the intervention figures
PAGE = re.compile(r"s(\d{3})-.*\.html")


class SentenceList(HTMLParser):
    """The items of the index's ``<ol class="sentences">``: (text, href or None)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.items: list[list] = []
        self.inside = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "ol" and a.get("class") == "sentences":
            self.inside = True
        elif self.inside and tag == "li":
            self.items.append(["", None])
        elif self.inside and tag == "a":
            self.items[-1][1] = a["href"]

    def handle_endtag(self, tag):
        if tag == "ol":
            self.inside = False

    def handle_data(self, data):
        if self.inside and self.items:
            self.items[-1][0] += data.strip()


def sentence_list(html: str) -> list[tuple[str, str | None]]:
    parser = SentenceList()
    parser.feed(html)
    return [(text, href) for text, href in parser.items]


def tree(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def pages_of(files: dict[str, bytes]) -> dict[int, str]:
    return {int(m.group(1)): name for name in files if (m := PAGE.fullmatch(name))}


def cli(*args: str):
    return CliRunner().invoke(main, list(args))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, tiny_model_dirs):
    """(sentence file, settings file, results folder) of one analysed 12-sentence corpus."""
    root = tmp_path_factory.mktemp("corpus-site")
    sentences = write_corpus(root / "corpus.txt", COUNT, seed=3)
    config = root / "attnreport.toml"
    config.write_text(
        f'model = "{tiny_model_dirs["llama"]}"\nsentences = "corpus.txt"\n'
        f'title = "Corpus"\nimages = false\nscaling_sentence = {IV}\n'
        "mean_sentences = [1, 10]\n"
    )
    result = cli("analyze", "--config", str(config), "--out", str(root / "results"))
    assert result.exit_code == 0, result.output
    return sentences, config, root / "results"


def render(corpus, out: Path, *extra: str) -> dict[str, bytes]:
    _, config, results = corpus
    result = cli("render", str(results), "--out", str(out), "--config", str(config), *extra)
    assert result.exit_code == 0, result.output
    return tree(out)


@pytest.fixture(scope="module")
def every_page(corpus, tmp_path_factory):
    return render(corpus, tmp_path_factory.mktemp("all") / "site")


@pytest.mark.parametrize(
    ("choice", "expected"),
    [("3", {0, 1, 2, IV}), ("0,5,7-8", {0, 5, 7, 8, IV}), ("all", set(range(COUNT)))],
)
def test_only_the_chosen_sentences_get_a_page(corpus, every_page, tmp_path, choice, expected):
    site = render(corpus, tmp_path / "site", "--pages", choice)
    pages = pages_of(site)
    assert set(pages) == expected
    for name in ["index.html", *pages.values()]:
        assert link_problems(name, scan(site[name].decode()), site) == [], name
    items = sentence_list(site["index.html"].decode())
    all_items = sentence_list(every_page["index.html"].decode())
    assert [text for text, _ in items] == [text for text, _ in all_items]  # every sentence
    assert len(items) == COUNT
    assert {i for i, (_, href) in enumerate(items) if href} == expected
    assert all(href == pages[i] for i, (_, href) in enumerate(items) if href)
    note = f"Pages for {len(expected)} of {COUNT} sentences"
    assert (note in site["index.html"].decode()) == (choice != "all")


def numbers_of(scripts: dict) -> dict:
    """Each figure's inline data without its links (``href``, ``opens``): a head opens a
    sentence page, so the links depend on which sentences have one; the numbers do not."""
    return {
        key: {c: v for c, v in (script.get("inline") or {}).items() if c not in ("href", "opens")}
        for key, script in scripts.items()
    }


def test_set_wide_numbers_and_pages_equal_those_of_the_full_site(corpus, every_page, tmp_path):
    site = render(corpus, tmp_path / "site", "--pages", "0,5,7-8")
    index = numbers_of(scan(site["index.html"].decode()).json_scripts)
    assert index and index == numbers_of(scan(every_page["index.html"].decode()).json_scripts)
    set_wide = [
        n
        for n in every_page
        if n.startswith(("data/index/", "results/")) and n != "results/render.json"
    ]
    assert set_wide and all(site.get(n) == every_page[n] for n in set_wide)
    full = pages_of(every_page)
    for i, name in pages_of(site).items():  # a page's figures do not depend on the others
        assert name == full[i]
        mine = scan(site[name].decode())
        assert mine.json_scripts == scan(every_page[name].decode()).json_scripts
        assert mine.tokens == scan(every_page[name].decode()).tokens


def test_prev_and_next_walk_the_existing_pages(corpus, tmp_path):
    site = render(corpus, tmp_path / "site", "--pages", "0,5,7-8")
    pages = pages_of(site)
    order = sorted(pages)
    for k, i in enumerate(order):
        html = site[pages[i]].decode()
        prev = re.search(r'<a rel="prev" href="([^"]+)"', html)
        nxt = re.search(r'<a rel="next" href="([^"]+)"', html)
        assert (prev.group(1) if prev else None) == (pages[order[k - 1]] if k else None)
        assert (nxt.group(1) if nxt else None) == (
            pages[order[k + 1]] if k + 1 < len(order) else None
        )


def test_the_choice_is_recorded_and_a_rerender_reproduces_the_site(corpus, tmp_path):
    site = render(corpus, tmp_path / "site", "--pages", "3")
    assert json.loads(site["results/render.json"])["pages"] == "3"
    about = site["index.html"].decode().split('<section id="about">')[1]
    assert "--pages 3" in about
    again = cli("render", str(tmp_path / "site" / "results"), "--out", str(tmp_path / "again"))
    assert again.exit_code == 0, again.output
    assert tree(tmp_path / "again") == site


def test_build_is_analyze_plus_render(corpus, tmp_path):
    """``build --pages`` gives the site ``analyze --pages`` then ``render`` give (the
    analysis keeps the chosen sentences' maps only), and leaves no results folder of its
    own behind."""
    _, config, _ = corpus
    out = tmp_path / "built"
    result = cli("build", "--config", str(config), "--out", str(out), "--pages", "0,5,7-8")
    assert result.exit_code == 0, result.output
    assert "built 6 page(s)" in result.output  # the index and 5 sentences
    analysed = tmp_path / "analysed"
    done = cli("analyze", "--config", str(config), "--out", str(analysed), "--pages", "0,5,7-8")
    assert done.exit_code == 0, done.output
    rendered = tmp_path / "rendered"
    done = cli("render", str(analysed), "--out", str(rendered), "--config", str(config),
               "--pages", "0,5,7-8")  # fmt: skip
    assert done.exit_code == 0, done.output
    assert tree(out) == tree(rendered)
    assert sorted(p.name for p in (out / "results" / "sentences").glob("*.json.gz")) == [
        f"{i:03d}.json.gz" for i in (0, 5, 7, 8, IV)
    ]
    parts = {p.parent.name for p in (out / "results" / "sentences").glob("*/*.js")}
    assert (
        parts == {f"{i:03d}" for i in (0, 5, 7, 8, IV)}
    )  # their maps, and only theirs  # the pages (the mean grid's sentence 1 needs no file: interventions.json names it)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["analysed", "built", "rendered"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--pages", "x"), "--pages 'x': give 'all', a count N, or indices like 0,5,10-12"),
        (("--pages", "5-2"), "--pages '5-2': range 5-2 runs backwards"),
        (("--pages", "3,40"), "--pages: sentence 40 does not exist (the corpus has 12, 0-11)"),
    ],
)
@pytest.mark.parametrize("command", ["render", "build"])
def test_bad_choices_are_one_line_errors(corpus, tmp_path, command, args, message):
    sentences, config, results = corpus
    out = tmp_path / "out"
    where = [str(results)] if command == "render" else ["--config", str(config)]
    result = cli(command, *where, "--out", str(out), *args)
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0]
    assert not out.exists()


def test_a_bad_stored_choice_is_a_one_line_error(corpus, tmp_path):
    site = tmp_path / "site"
    render(corpus, site, "--pages", "3")
    for stored, message in ((3, "pages must be a string"), ("3-1", "range 3-1 runs backwards")):
        options = json.loads((site / "results" / "render.json").read_text())
        (site / "results" / "render.json").write_text(json.dumps({**options, "pages": stored}))
        result = cli("render", str(site / "results"), "--out", str(tmp_path / "again"))
        assert result.exit_code == 1 and message in result.output, result.output
        assert len(result.output.strip().splitlines()) == 1
        assert not (tmp_path / "again").exists()
