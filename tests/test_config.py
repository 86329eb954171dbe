"""attnreport.toml: every bad value is one clear line and a non-zero exit."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from attnreport.cli import main
from attnreport.config import KEYS, STARTER, Settings, load_settings
from attnreport.errors import AttnReportError
from tests.spec_walk import walk


def build_with(tmp_path, toml: str, *args: str):
    config = tmp_path / "attnreport.toml"
    config.write_text(toml)
    result = CliRunner().invoke(
        main, ["build", "--config", str(config), "--out", str(tmp_path / "out"), *args]
    )
    return result.exit_code, result.output


@pytest.mark.parametrize(
    ("toml", "fragment"),
    [
        ('titel = "x"', "unknown key 'titel'; did you mean 'title'?"),
        ('breakdown_ranks = "three"', "'breakdown_ranks' must be int"),
        ("images = 1", "'images' must be bool"),
        ("epsilons = [0.5, -1e-3]", "epsilons must be positive numbers"),
        ('epsilons = [0.5, "tiny"]', "every item of 'epsilons' must be int"),
        ("epsilons = []", "epsilons must be positive numbers"),
        ("map_tokens = 0", "'map_tokens' must be at least 1"),
        ("intervene_layer = -2", "'intervene_layer' must not be negative"),
        ("title = ", "is not valid TOML"),
        ("view_head = [1]", "'view_head' must be [layer, head]"),
        ("view_head = [1, -2]", "'view_head' must be [layer, head]"),
        ('dtype = "float64"', "'dtype' must be one of float32, bfloat16, float16"),
        ('bos = "sometimes"', "'bos' must be one of auto, always, never"),
        ("truncate = 1", "'truncate' must be bool"),
    ],
)
def test_bad_config_values(tmp_path, toml, fragment):
    code, output = build_with(tmp_path, toml)
    assert code == 1, output
    assert fragment in output and output.count("\n") == 1 and "Traceback" not in output
    assert not (tmp_path / "out").exists()


def test_intervention_layer_out_of_range(tmp_path, tiny_model_dirs):
    sentences = tmp_path / "s.txt"
    sentences.write_text("the cat sat\n")
    toml = f'model = "{tiny_model_dirs["gpt2"]}"\nsentences = "{sentences}"\nintervene_layer = 7\n'
    code, output = build_with(tmp_path, toml)
    assert code == 1 and "intervention layer 7 is out of range: the model has layers 0-1" in output
    assert not (tmp_path / "out").exists()


def test_command_line_overrides_config(tmp_path):
    config = tmp_path / "c.toml"
    config.write_text('title = "From file"\nout = "folder"\nimages = true\n')
    merged = load_settings(config, {"images": False})
    assert merged.title == "From file" and merged.images is False
    assert merged.out == str(tmp_path / "folder")


def test_a_bad_command_line_value_is_blamed_on_the_command_line(tmp_path):
    code, output = build_with(tmp_path, 'title = "fine"', "--intervene-layer", "-2")
    assert code == 1 and "error: command line: 'intervene_layer' must not be negative" in output
    assert not (tmp_path / "out").exists()


def test_every_settings_value_is_checked_when_made():
    with pytest.raises(AttnReportError, match="'map_tokens' must be at least 1"):
        Settings(map_tokens=0)
    with pytest.raises(AttnReportError, match="epsilons must be positive numbers"):
        Settings(epsilons=(1e-3, float("inf")))
    settings = Settings(epsilons=[1, 0.5], view_head=[2, 3])
    assert settings.epsilons == (1.0, 0.5) and isinstance(settings.epsilons[0], float)
    assert settings.view_head == (2, 3)


def test_starter_config_names_every_setting_and_loads(tmp_path):
    for key in KEYS:
        assert f"\n{key} = " in STARTER or f"\n# {key} = " in STARTER, key
    (tmp_path / "sentences.txt").write_text("the cat sat\n")
    (tmp_path / "attnreport.toml").write_text(STARTER)
    settings = load_settings(tmp_path / "attnreport.toml")
    assert settings.sentences == str(tmp_path / "sentences.txt")
    assert settings.recorded() == Settings().recorded()


def test_manifest_records_the_settings_that_change_the_numbers():
    recorded = Settings(view_head=(1, 2), mean_sentences=(0, 1)).recorded()
    assert set(recorded) == {
        "bos",
        "chat_template",
        "breakdown_ranks",
        "epsilons",
        "intervene_layer",
        "intervene_depth",
        "map_tokens",
        "mean_sentences",
        "pages",
        "scaling_sentence",
        "scaling_sentences",
        "view_head",
    }
    assert recorded["view_head"] == [1, 2] and recorded["epsilons"] == [0.5, 1e-3, 1e-10]


@pytest.mark.parametrize(
    ("view", "fragment"),
    [
        ("[0, 4]", "view_head head 4 does not exist: the model has heads 0-3"),
        ("[5, 0]", "view_head layer 5 does not exist"),
    ],
)
def test_view_head_must_exist_in_the_model(tmp_path, tiny_model_dirs, view, fragment):
    sentences = tmp_path / "s.txt"
    sentences.write_text("the cat sat\n")
    toml = f'model = "{tiny_model_dirs["gpt2"]}"\nsentences = "{sentences}"\nview_head = {view}\n'
    code, output = build_with(tmp_path, toml)
    assert code == 1 and fragment in output, output
    assert not (tmp_path / "out").exists()


@pytest.mark.slow  # a full build
def test_pages_open_on_the_chosen_head(tmp_path, tiny_model_dirs):
    sentences = tmp_path / "s.txt"
    sentences.write_text("the cat sat on the mat\n")
    toml = f'model = "{tiny_model_dirs["gpt2"]}"\nsentences = "{sentences}"\nview_head = [1, 3]\nimages = false\n'
    code, output = build_with(tmp_path, toml)
    assert code == 0, output
    page = next((tmp_path / "out").glob("s000-*.html")).read_text()
    payload = json.loads(page.split('id="ar-data-attention-map">', 1)[1].split("</script>", 1)[0])
    opens = {p["name"]: p["value"] for p in bound(payload["spec"])}
    assert (opens["layer"], opens["head"]) == (1, 3)  # the view the page opens on
    # its rows come from the results' map part of that layer (schema 10), inlined none
    assert payload["results_chunks"] and payload["inline"] == {}
    assert payload["chunks"][str(opens["layer"])] == "sentences/000/l1"


def bound(spec):
    """Every control a spec binds (``{"name", "value", "bind"}``), wherever it sits."""
    return [node for node in walk(spec) if {"name", "value", "bind"} <= node.keys()]
