"""The family registry: one row per named architecture family, one module per adapter.

A family record names an architecture (for the manifest and the README table) or, for a
model whose attention does not call the interface (BLOOM), supplies the adapter that
makes it. It admits nothing: every model, named here or not, is admitted by the
self-check at load (``attnreport.verification.verified_layers``), and ``family_for`` gives an
unnamed ``model_type`` a plain interface family named after it. To name a family: a row
in ``table.ROWS`` and a tiny model in ``tests/tiny_models.py`` (``tests/tiny_adapters.py``
for adapters; a hybrid's adapter, and JetMoE's, DiffLlama's and DeepSeek V2's, are
verified in the zoo, ``tests/test_zoo.py``, and their numbers checked in
``tests/test_zoo_adapters.py``). An adapter is also a module here whose ``ADAPTER``
(``adapter.Adapter``) names the attention class it replaces and the forward that calls
the interface (and, where the model has no one output projection, the one it composes:
``composed.py``); its row names the module.
"""

from __future__ import annotations

from importlib import import_module

from attnreport.errors import AttnReportError
from attnreport.models.families.adapter import AdapterFamily
from attnreport.models.families.base import POSITIONAL, Family, InterfaceFamily
from attnreport.models.families.table import ROWS, Row


def _family(row: Row) -> Family:
    """The family of one row of ``table.ROWS`` (an adapter's code from its module)."""
    name, types, positional, verified, architecture, adapter = row
    record = (name, tuple(types.split()), positional, tuple(verified.split()))
    if not adapter:
        return InterfaceFamily(*record, tuple(architecture.split()))
    code = import_module(f"{__name__}.{adapter}").ADAPTER
    return AdapterFamily(*record, tuple(architecture.split()), adapter=code)


FAMILIES: tuple[Family, ...] = tuple(_family(row) for row in ROWS)
SUPPORTED_MODEL_TYPES: tuple[str, ...] = tuple(t for f in FAMILIES for t in f.model_types)


def family_for(model_type: str) -> Family:
    """The named family of a ``config.model_type``, else an interface family named after it
    (its positions are found per layer when it loads: ``positional`` is empty)."""
    for family in FAMILIES:
        if model_type in family.model_types:
            return family
    if not model_type:
        raise AttnReportError("the model's config names no model_type")
    return InterfaceFamily(name=model_type, model_types=(model_type,), positional="")


__all__ = [
    "FAMILIES",
    "POSITIONAL",
    "SUPPORTED_MODEL_TYPES",
    "Family",
    "InterfaceFamily",
    "family_for",
]
