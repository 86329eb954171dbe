"""Property tests: any sentence text and any config values give a clean build or a clean error."""

from __future__ import annotations

import html
import re

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from attnreport.cli import main
from attnreport.config import KEYS, make_settings
from attnreport.errors import AttnReportError
from tests.tiny_models import save_byte_model

HOSTILE = [
    "</script><img src=x onerror=alert(1)>",
    "\"quotes' `back` ‘curly’ «guillemets»",
    "{{ 7*7 }} {% if x %} ${alert(1)}",
    "emoji 😀🏳️‍🌈 rtl שלום עולם mixed",
    "combining e\u0301 zero\u200bwidth \u200d joiner",
    "nul \x00 bell \x07 escape \x1b[31m",
]


@pytest.fixture(scope="module")
def byte_model(tmp_path_factory):
    return save_byte_model(tmp_path_factory.mktemp("byte-model") / "gpt2-bytes")


def build(tmp_path, model, lines: list[str]):
    sentences = tmp_path / "sentences.txt"
    sentences.write_bytes("\n".join(lines).encode("utf-8", "surrogatepass"))
    out = tmp_path / "site"
    args = [
        "build",
        "--model",
        str(model),
        "--sentences",
        str(sentences),
        "--out",
        str(out),
        "--no-images",
        "--force",
    ]
    result = CliRunner().invoke(main, args, catch_exceptions=True)
    return result, out


def assert_clean(result) -> None:
    assert "Traceback" not in result.output
    if result.exit_code == 0:
        return
    assert result.exit_code == 1, (result.exit_code, result.output, result.exception)
    assert isinstance(result.exception, SystemExit), result.exception
    assert len([line for line in result.output.splitlines() if line.startswith("error:")]) == 1


def test_hostile_sentences_build_and_appear_escaped(tmp_path, byte_model):
    result, out = build(tmp_path, byte_model, HOSTILE)
    assert result.exit_code == 0, result.output
    pages = {p.name: p.read_text(encoding="utf-8") for p in out.glob("*.html")}
    assert all(len(name) < 60 and re.fullmatch(r"[a-z0-9-]+\.html", name) for name in pages)
    everything = "".join(pages.values())
    assert (
        "<img src=x" not in everything
        and "onerror=alert(1)>" not in everything.replace("&gt;", ">").split("<script")[0]
    )
    assert html.escape("</script><img src=x onerror=alert(1)>") in everything


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(lines=st.lists(st.text(max_size=40), min_size=1, max_size=3))
def test_any_sentence_text_builds_or_fails_cleanly(tmp_path_factory, byte_model, lines):
    tmp_path = tmp_path_factory.mktemp("prop")
    result, _ = build(tmp_path, byte_model, lines)
    assert_clean(result)


TOML_VALUES = st.recursive(
    st.one_of(
        st.booleans(), st.integers(-10, 10**6), st.floats(allow_nan=True), st.text(max_size=12)
    ),
    lambda inner: st.lists(inner, max_size=4),
    max_leaves=6,
)


@settings(max_examples=300, deadline=None)
@given(
    values=st.dictionaries(
        st.one_of(st.sampled_from(KEYS), st.text(max_size=10)), TOML_VALUES, max_size=5
    )
)
def test_any_config_values_validate_or_fail_cleanly(values):
    try:
        made = make_settings(values, "attnreport.toml")
    except AttnReportError as err:
        assert "\n" not in str(err) and str(err).startswith("attnreport.toml: ")
        return
    assert {key: getattr(made, key) for key in values} == {
        key: tuple(v) if isinstance(v, list) else v for key, v in values.items()
    }
