"""A model placed by accelerate (``device_map``) gives the plain model's results.

On this CPU-only machine the placement offloads: ``max_memory`` below the model's size
makes accelerate keep the first blocks in CPU memory and write the others to disk; their
weights are ``meta`` tensors between calls and each offloaded module runs through
accelerate's hooks, which load its weights for the call. Capture, verify, the analyses
and the interventions (which replay the blocks before their layer) must all see the real
weights and give the plain model's numbers, and leave accelerate's hooks in place.
"""

from __future__ import annotations

import dataclasses

import pytest
import torch
from click.testing import CliRunner

from attnreport.build import study
from attnreport.capture import capture_attention
from attnreport.cli import main
from attnreport.config import Settings
from attnreport.errors import AttnReportError
from attnreport.models import load_model
from attnreport.models.layout import discover
from attnreport.models.placement import input_device, swapped_forward
from attnreport.results.compare import compare_results
from attnreport.session import open_session
from attnreport.verification import verify_sentences

SENTENCES = ["the cat chased the mouse and the dog sat on the mat", "what does attention focus ?"]
FAMILIES = (
    "llama",
    "gpt_oss",
    "bloom",
    "gpt2",
    "gemma3",
)  # GQA; sinks + MoE; adapter; Conv1D; post-norm


@pytest.fixture(scope="module")
def sentence_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("sentences") / "sentences.txt"
    path.write_text("\n".join(SENTENCES) + "\n", encoding="utf-8")
    return str(path)


def offloaded_session(plain, directory):
    """The plain session's model loaded again with 60% of its size allowed in CPU memory."""
    size = sum(p.numel() * p.element_size() for p in plain.model.parameters())
    loaded = load_model(str(directory), device_map="auto", max_memory={"cpu": int(size * 0.6)})
    specs = discover(loaded.family, loaded.model)
    return dataclasses.replace(plain, loaded=loaded, specs=specs)


def _offloaded_blocks(session) -> list[int]:
    return [s.layer for s in session.specs if s.out_proj.weight.device.type == "meta"]


@pytest.mark.parametrize("name", FAMILIES)
def test_offloaded_model_gives_the_plain_results(tiny_model_dirs, sentence_file, name):
    plain = open_session(str(tiny_model_dirs[name]), sentence_file)
    offloaded = offloaded_session(plain, tiny_model_dirs[name])
    assert offloaded.loaded.device == "auto: cpu, disk"  # some modules in CPU memory, some on disk
    assert set(offloaded.model.hf_device_map.values()) == {"cpu", "disk"}
    assert _offloaded_blocks(offloaded), "nothing was offloaded; the test would prove nothing"

    ids = plain.token_tensors()
    for expected, actual in zip(
        verify_sentences(plain.model, plain.specs, ids),
        verify_sentences(offloaded.model, offloaded.specs, ids),
        strict=True,
    ):
        assert actual.passed, (actual.name, actual.max_error, actual.rule)
        assert abs(actual.max_error - expected.max_error) <= expected.tolerance

    settings = Settings(sentences=sentence_file, images=False, intervene_layer=1)
    comparison = compare_results(
        study(settings, session=plain)[1], study(settings, session=offloaded)[1]
    )
    assert comparison.ok, comparison.problems[:5]

    # the interventions replayed blocks; accelerate's hooks must still load the weights
    assert all("forward" in vars(s.block) for s in offloaded.specs)
    again = capture_attention(offloaded.model, offloaded.specs, ids[0])
    reference = capture_attention(plain.model, plain.specs, ids[0])
    for a, b in zip(reference.records(), again.records(), strict=True):
        torch.testing.assert_close(b.updates, a.updates, rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(b.probs, a.probs, rtol=0, atol=1e-6)
    assert all(s.out_proj.weight.device.type == "meta" for s in offloaded.specs[-1:])


def test_device_map_on_the_command_line(tiny_model_dirs, sentence_file):
    args = ["verify", "--model", str(tiny_model_dirs["qwen2"]), "--sentences", sentence_file]
    result = CliRunner().invoke(main, [*args, "--device-map", "balanced", "--dtype", "bfloat16"])
    assert result.exit_code == 0, result.output
    assert "all 3 checks passed" in result.output


def test_the_device_map_setting_is_checked():
    assert Settings(device_map="auto").device_map == "auto"
    assert Settings().device_map is None
    with pytest.raises(AttnReportError, match="device_map"):
        Settings(device_map="sequential")
    with pytest.raises(AttnReportError, match="unknown device map"):
        load_model("default", device_map="everywhere")


def test_input_device_of_a_plain_and_an_offloaded_model(tiny_model_dirs):
    plain = load_model(str(tiny_model_dirs["llama"]))
    assert input_device(plain.model) == torch.device("cpu")
    offloaded = load_model(
        str(tiny_model_dirs["llama"]), device_map="auto", max_memory={"cpu": 1000}
    )
    assert offloaded.model.get_input_embeddings().weight.device.type == "meta"
    assert input_device(offloaded.model) == torch.device("cpu")


def test_swapped_forward_puts_back_what_was_there():
    plain = torch.nn.Linear(2, 2)
    with swapped_forward(plain, lambda x: x):
        assert plain(torch.ones(2)).tolist() == [1.0, 1.0]
    assert "forward" not in vars(plain)  # the class's method again
    wrapped = torch.nn.Linear(2, 2)
    wrapper = wrapped.forward  # stands for accelerate's instance-level wrapper
    wrapped.forward = wrapper
    with pytest.raises(RuntimeError), swapped_forward(wrapped, lambda x: x):
        raise RuntimeError("the pass failed")
    assert vars(wrapped)["forward"] is wrapper


def test_ray_workers_and_a_device_map_are_refused_together(tmp_path, sentence_file, monkeypatch):
    monkeypatch.chdir(tmp_path)  # not the repository's attnreport.toml (two models)
    args = ["analyze", "--sentences", sentence_file, "--out", str(tmp_path / "out")]
    result = CliRunner().invoke(main, [*args, "--engine", "ray", "--device-map", "auto"])
    assert result.exit_code == 1
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "--device-map" in errors[0], result.output
    assert not (tmp_path / "out").exists()  # refused before anything was written
