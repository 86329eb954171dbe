"""Pure analyses: captured ``LayerRecord`` values in, tables of the results schema out.

See ``docs/results-schema.md`` for every table, column and definition.
"""

from __future__ import annotations

import importlib
from typing import Any

# name -> the module defining it. Imported on first use (PEP 562), so a module that needs
# only the table-level functions (``analyses.sinks`` for the report's findings) does not
# import torch with the capture-side analyses: ``render`` must never import torch.
_WHERE = {
    "LayerTensors": "attnreport.analyses.heads",
    "analyze_layer_blockwise": "attnreport.analyses.blockwise",
    "FOCUS_STATISTICS": "attnreport.analyses.focus",
    "KeyOrder": "attnreport.analyses.attention_map",
    "LAYER_TABLES": "attnreport.analyses.sentence",
    "SENTENCE_TABLES": "attnreport.analyses.sentence",
    "Table": "attnreport.analyses.tables",
    "analyze_layer": "attnreport.analyses.sentence",
    "attention_triangles": "attnreport.analyses.attention_map",
    "block_impact_table": "attnreport.analyses.impact",
    "breakdown_table": "attnreport.analyses.breakdown",
    "concat_tables": "attnreport.analyses.tables",
    "focus_sorted": "attnreport.analyses.focus",
    "focus_table": "attnreport.analyses.focus",
    "head_impact_table": "attnreport.analyses.impact",
    "key_order": "attnreport.analyses.attention_map",
    "merge_layers": "attnreport.analyses.sentence",
    "rank_keys": "attnreport.analyses.attention_map",
    "round_sig": "attnreport.analyses.tables",
    "table_to_json": "attnreport.analyses.tables",
    "top_keys": "attnreport.analyses.attention_map",
    "top_table": "attnreport.analyses.attention_map",
    "triangle": "attnreport.analyses.tables",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_WHERE[name]), name)
    globals()[name] = value
    return value
