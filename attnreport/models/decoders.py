"""Which models attnreport reads: causal decoders. Refuse, from the config alone (before
any weight is loaded), an encoder or an encoder-decoder, in the user's terms.

The rule is ``attnreport.checks.architecture_problem`` (torch-free, so the CLI asks it
before loading anything); ``load_model`` (the CLI) and ``models.held.held_model`` (the
Python API) both ask it here on the loaded config, so both say the same.
"""

from __future__ import annotations

from typing import Any

from attnreport.checks import architecture_problem
from attnreport.errors import AttnReportError


def check_causal_decoder(config: Any, name: str | None = None, architecture: str = "") -> None:
    """One-line ``AttnReportError`` for the config of an encoder or an encoder-decoder;
    ``name`` is how the message names the model (else its ``model_type``), and
    ``architecture`` its class when the config names none (a model built in memory)."""
    values = config.to_dict() if hasattr(config, "to_dict") else dict(vars(config))
    if architecture and not values.get("architectures"):
        values["architectures"] = [architecture]
    label = name or str(values.get("model_type") or "this model")
    problem = architecture_problem(values, label)
    if problem:
        raise AttnReportError(problem)
