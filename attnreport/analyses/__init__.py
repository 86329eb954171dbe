"""Pure analyses: captured ``LayerRecord`` values in, tables of the results schema out.

See ``docs/results-schema.md`` for every table, column and definition.
"""

from attnreport.analyses.attention_map import (
    KeyOrder,
    attention_triangles,
    key_order,
    rank_keys,
    top_keys,
    top_table,
)
from attnreport.analyses.blockwise import analyze_layer_blockwise
from attnreport.analyses.breakdown import breakdown_table
from attnreport.analyses.focus import FOCUS_STATISTICS, focus_sorted, focus_table
from attnreport.analyses.heads import LayerTensors
from attnreport.analyses.impact import block_impact_table, head_impact_table
from attnreport.analyses.pooling import pool_focus, pool_impact
from attnreport.analyses.sentence import (
    LAYER_TABLES,
    SENTENCE_TABLES,
    analyze_layer,
    merge_layers,
)
from attnreport.analyses.tables import (
    Table,
    concat_tables,
    round_sig,
    table_to_json,
    triangle,
)

__all__ = [
    "FOCUS_STATISTICS",
    "LAYER_TABLES",
    "SENTENCE_TABLES",
    "KeyOrder",
    "LayerTensors",
    "Table",
    "analyze_layer",
    "analyze_layer_blockwise",
    "attention_triangles",
    "block_impact_table",
    "breakdown_table",
    "concat_tables",
    "focus_sorted",
    "focus_table",
    "head_impact_table",
    "key_order",
    "merge_layers",
    "pool_focus",
    "pool_impact",
    "rank_keys",
    "round_sig",
    "table_to_json",
    "top_keys",
    "top_table",
    "triangle",
]
