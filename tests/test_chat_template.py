"""The chat_template setting reads each sentence as a user message in the tokenizer's chat
template, and the pages say how an instruction-tuned model's sentences were read."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from transformers import AutoTokenizer

from attnreport.cli import main
from attnreport.config import Settings
from attnreport.errors import AttnReportError
from attnreport.results import load
from attnreport.sentences import has_chat_template, sentence_ids, tokenize_sentences
from tests.tiny_models import tiny_tokenizer

# a template written only in the tiny vocabulary's words: "<s>" opens a message, "." ends it
TEMPLATE = "{% for m in messages %}<s> {{ m['content'] }} .{% endfor %}"


def templated():
    tok = tiny_tokenizer()
    tok.chat_template = TEMPLATE
    return tok


def test_a_sentence_becomes_the_templates_user_message():
    tok = templated()
    text = "the cat sat on the mat"
    expected = tok("<s> the cat sat on the mat .", add_special_tokens=False).input_ids
    assert sentence_ids(text, tok, chat_template=True) == expected
    assert sentence_ids(text, tok) == tok(text).input_ids  # plain text, as before
    (sentence,) = tokenize_sentences([text], tok, 64, chat_template=True)
    assert sentence.token_ids == tuple(expected) and sentence.text == text
    assert sentence.tokens[0] == "<s>" and sentence.tokens[-1] == "."


def test_it_is_off_by_default_and_refused_without_a_template():
    assert Settings().chat_template is False
    assert has_chat_template(templated()) and not has_chat_template(tiny_tokenizer())
    with pytest.raises(AttnReportError, match="has no chat template"):
        sentence_ids("the cat", tiny_tokenizer(), chat_template=True)


@pytest.fixture(scope="module")
def chat_model(tiny_model_dirs, tmp_path_factory) -> Path:
    """The tiny Llama with ``TEMPLATE`` saved in its tokenizer."""
    folder = tmp_path_factory.mktemp("chat") / "llama"
    shutil.copytree(tiny_model_dirs["llama"], folder)
    tok = AutoTokenizer.from_pretrained(folder)
    tok.chat_template = TEMPLATE
    tok.save_pretrained(folder)
    return folder


def built(model: Path, folder: Path, chat: bool) -> tuple[Path, Path]:
    (folder / "s.txt").write_text("the cat sat on the mat\nthe dog chased a mouse\n")
    (folder / "a.toml").write_text(
        f'model = "{model}"\nsentences = "s.txt"\nimages = false\n'
        f"chat_template = {'true' if chat else 'false'}\n"
    )
    args = ["--config", str(folder / "a.toml")]
    done = CliRunner().invoke(main, ["analyze", *args, "--out", str(folder / "r")])
    assert done.exit_code == 0, done.output
    done = CliRunner().invoke(
        main, ["render", str(folder / "r"), *args, "--out", str(folder / "s")]
    )
    assert done.exit_code == 0, done.output
    return folder / "r", folder / "s"


def pages_text(site: Path) -> str:
    return " ".join(p.read_text(encoding="utf-8") for p in sorted(site.glob("*.html")))


def test_an_analysis_reads_the_template_and_every_page_says_so(chat_model, tmp_path):
    results, site = built(chat_model, tmp_path, chat=True)
    manifest = load(results).manifest
    assert manifest.settings.chat_template and manifest.model.has_chat_template
    tok = AutoTokenizer.from_pretrained(chat_model)
    expected = tok("<s> the cat sat on the mat .", add_special_tokens=False).input_ids
    assert manifest.sentences[0].token_ids == tuple(expected)
    index = (site / "index.html").read_text(encoding="utf-8")
    assert "applied: each sentence is read as a user message in it" in index
    for page in site.glob("s0*.html"):
        assert "read as a user message in the tokenizer&#39;s chat template" in page.read_text()


def test_plain_text_from_a_model_with_a_template_is_said_to_be(chat_model, tmp_path):
    results, site = built(chat_model, tmp_path, chat=False)
    manifest = load(results).manifest
    assert not manifest.settings.chat_template and manifest.model.has_chat_template
    index = (site / "index.html").read_text(encoding="utf-8")
    assert "the sentences were read without it, as plain text" in index
    pages = list(site.glob("s0*.html"))
    assert len(pages) == 2
    for page in pages:
        assert "read as plain text, without the chat template" in page.read_text()


def test_a_model_without_a_template_says_nothing_of_one(tiny_model_dirs, tmp_path):
    results, site = built(tiny_model_dirs["llama"], tmp_path, chat=False)
    assert not load(results).manifest.model.has_chat_template
    assert "chat template" not in pages_text(site).replace("chat_template", "")
