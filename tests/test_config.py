"""attnreport.toml: every bad value is one clear line and a non-zero exit."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from attnreport.charts.embed import decode_columns
from attnreport.cli import main
from attnreport.config import merged_config


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
    merged = merged_config(config, {"images": False, "out": None})
    assert merged.title == "From file" and merged.images is False
    assert merged.out == str(tmp_path / "folder")


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


def test_pages_open_on_the_chosen_head(tmp_path, tiny_model_dirs):
    sentences = tmp_path / "s.txt"
    sentences.write_text("the cat sat on the mat\n")
    toml = f'model = "{tiny_model_dirs["gpt2"]}"\nsentences = "{sentences}"\nview_head = [1, 3]\nimages = false\n'
    code, output = build_with(tmp_path, toml)
    assert code == 0, output
    page = next((tmp_path / "out").glob("s000-*.html")).read_text()
    payload = page.split('id="ar-data-attention-map">', 1)[1].split("</script>", 1)[0]
    inline = decode_columns(json.loads(payload)["inline"])  # the rows drawn first
    assert set(inline["layer"]) == {1} and set(inline["head"]) == {3}
