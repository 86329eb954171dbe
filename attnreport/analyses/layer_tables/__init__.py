"""Per-layer analyses that each fill a sentence table of their own: a registry of small
modules.

A new sentence table is its class (``attnreport.results``), its field in
``SentenceTables`` and the analysis that fills it: a module in this package whose
function, decorated with ``fills(TheTable)``, takes one layer's ``LayerRecord`` and
returns that layer's rows (column name -> 1-D array). Every module here is imported on
first use, so a module registers itself by existing. The pass (``sentence_pass``) runs
each analysis on every layer of a dense capture (a sentence of at most ``map_tokens``
tokens; a longer one, captured blockwise, has no record and so no such table: its field
must default to None), concatenates the rows in layer order, and the results type takes
the table by its field. A ``PooledTable`` of ``set.json`` naming it is then pooled over
the corpus too (``attnreport.corpus.pooled``).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from functools import cache

from attnreport.analyses.tables import Table
from attnreport.records import LayerRecord
from attnreport.results import tables as rt
from attnreport.results import types

LayerAnalysis = Callable[[LayerRecord], Table]
ANALYSES: dict[type[rt.Table], LayerAnalysis] = {}


def fills(kind: type[rt.Table]) -> Callable[[LayerAnalysis], LayerAnalysis]:
    """Register the decorated function as the per-layer analysis of table ``kind`` (a
    second analysis of the same table replaces the first)."""

    def register(analysis: LayerAnalysis) -> LayerAnalysis:
        ANALYSES[kind] = analysis
        return analysis

    return register


@cache
def _import_modules() -> None:
    for module in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{module.name}")


def layer_tables(record: LayerRecord) -> dict[str, Table]:
    """The registered analyses' rows of one layer, by the name of the ``SentenceTables``
    field each fills (tables without a field are not computed)."""
    _import_modules()
    kinds = types.table_kinds(types.SentenceTables).items()
    return {name: ANALYSES[kind](record) for name, kind in kinds if kind in ANALYSES}
