"""The author's own words: a lede and an afterword in Markdown, with raw HTML shown as
text (never run), from the settings file through to the index page."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

from click.testing import CliRunner

from attnreport.cli import main
from attnreport.config import load_settings
from attnreport.output import write_site
from attnreport.results import dump
from attnreport.site import SiteOptions, assemble_site
from attnreport.site.markdown import markdown_html
from tests.fixtures.fake_results import fake_study, typed
from tests.site_helpers import demo_charts

LEDE = "Why *this* model? <script>alert('lede')</script> See **below**."
AFTERWORD = "First thoughts.\n\nSecond paragraph with [a link](https://example.org) and [bad](javascript:alert(1))."


class Scan(HTMLParser):
    """Tags and text inside the element with ``id`` or ``class`` ``target``."""

    def __init__(self, target: str) -> None:
        super().__init__()
        self.target, self.depth = target, 0
        self.tags: list[tuple[str, dict]] = []
        self.text: list[str] = []
        self.scripts = 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.scripts += tag == "script" and "src" not in attrs and self.depth > 0
        if self.depth:
            self.depth += 1
            self.tags.append((tag, attrs))
        elif self.target in (attrs.get("id"), attrs.get("class")):
            self.depth = 1

    def handle_endtag(self, tag):
        if self.depth:
            self.depth -= 1

    def handle_data(self, data):
        if self.depth:
            self.text.append(data)


def scan(page: str, target: str) -> Scan:
    parser = Scan(target)
    parser.feed(page)
    return parser


def test_markdown_escapes_raw_html_and_unsafe_links():
    out = markdown_html(LEDE + "\n\n" + AFTERWORD)
    assert "<script>" not in out and "&lt;script&gt;alert(" in out
    assert "<em>this</em>" in out and "<strong>below</strong>" in out
    assert 'href="https://example.org"' in out and "javascript:" not in out.split("[bad]")[0]
    assert 'href="javascript' not in out
    assert markdown_html(None) == "" and markdown_html("") == ""


def test_lede_and_afterword_on_the_index_page():
    study = typed(fake_study(2))
    options = SiteOptions(lede=LEDE, afterword=AFTERWORD)
    index = assemble_site(study, options, demo_charts())["index.html"].decode()
    lede = scan(index, "lede")
    assert lede.scripts == 0 and [t for t, _ in lede.tags] == ["p", "em", "strong"]
    assert "<script>alert('lede')</script>" in "".join(lede.text)  # shown as text
    after = scan(index, "afterword")
    assert [t for t, _ in after.tags if t == "p"] == ["p", "p"]
    hrefs = [a.get("href") for t, a in after.tags if t == "a"]
    assert hrefs == ["https://example.org"]
    assert index.index('id="afterword"') < index.index('id="about"')
    plain = assemble_site(study, SiteOptions(), demo_charts())["index.html"].decode()
    assert 'id="afterword"' not in plain and "This report opens up" in plain


def test_the_settings_file_carries_them_to_render(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("attnreport.toml").write_text(
        f'lede = "{LEDE}"\nafterword = """\n{AFTERWORD}\n"""\n', encoding="utf-8"
    )
    settings = load_settings("attnreport.toml")
    assert settings.lede == LEDE and settings.afterword.strip() == AFTERWORD
    results = write_site(dump(typed(fake_study(2, n_layers=2, n_heads=2))), tmp_path / "r")
    done = CliRunner().invoke(main, ["render", str(results), "--out", "site", "--no-images"])
    assert done.exit_code == 0, done.output
    index = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    assert scan(index, "lede").scripts == 0 and "<em>this</em>" in index
    assert len(scan(index, "afterword").text) > 0


def test_a_jsonl_note_shows_on_its_sentences_page(tmp_path, monkeypatch):
    import json

    study = fake_study(2, n_layers=2, n_heads=2)
    texts = [s.text for s in typed(study).manifest.sentences]
    monkeypatch.chdir(tmp_path)
    lines = [{"text": texts[0], "note": "Note *one* <script>x</script>"}, {"text": texts[1]}]
    Path("s.jsonl").write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    Path("attnreport.toml").write_text('sentences = "s.jsonl"\n')
    results = write_site(dump(typed(study)), tmp_path / "r")
    done = CliRunner().invoke(main, ["render", str(results), "--out", "site", "--no-images"])
    assert done.exit_code == 0, done.output
    pages = sorted((tmp_path / "site").glob("s00*.html"))
    first, second = (p.read_text(encoding="utf-8") for p in pages)
    note = scan(first, "note")
    assert [t for t, _ in note.tags] == ["p", "em"] and note.scripts == 0
    assert "<script>x</script>" in "".join(note.text)
    assert 'class="note"' not in second
    again = CliRunner().invoke(main, ["render", "site/results", "--out", "again"])
    assert again.exit_code == 0 and (tmp_path / "again" / pages[0].name).read_text() == first
