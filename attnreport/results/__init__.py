"""The results schema's one owner: typed values, canonical ``dump``, checked ``load``,
and ``compare`` of two runs within a tolerance (``docs/results-schema.md``).

Nothing here imports torch or transformers: a site renders from results alone.
"""

from attnreport.results.interventions import GridCell, Interventions, MeanGrid, ScalingGrid
from attnreport.results.io import Results, as_results, dump, dump_json, from_parts, load, to_json
from attnreport.results.layout import CURRENT, Layout, read_json
from attnreport.results.manifest import (
    READABLE_VERSIONS,
    SCHEMA,
    SCHEMA_VERSION,
    ListedSentence,
    Manifest,
    ModelInfo,
    StudySettings,
)
from attnreport.results.tables import (
    BlockImpactTable,
    BreakdownTable,
    FocusBySentenceTable,
    FocusPooledTable,
    FocusSortedTable,
    FocusTable,
    HeadImpactTable,
    ImpactPooledTable,
    PooledSortedTable,
    Table,
    TokensTable,
    TopTable,
)
from attnreport.results.types import AttentionMaps, SentenceResults, SentenceTables, SetResults

__all__ = [
    "CURRENT",
    "READABLE_VERSIONS",
    "SCHEMA",
    "SCHEMA_VERSION",
    "AttentionMaps",
    "BlockImpactTable",
    "BreakdownTable",
    "FocusBySentenceTable",
    "FocusPooledTable",
    "FocusSortedTable",
    "FocusTable",
    "GridCell",
    "HeadImpactTable",
    "ImpactPooledTable",
    "Interventions",
    "Layout",
    "ListedSentence",
    "Manifest",
    "MeanGrid",
    "ModelInfo",
    "PooledSortedTable",
    "Results",
    "ScalingGrid",
    "SentenceResults",
    "SentenceTables",
    "SetResults",
    "StudySettings",
    "Table",
    "TokensTable",
    "TopTable",
    "as_results",
    "dump",
    "dump_json",
    "from_parts",
    "load",
    "read_json",
    "to_json",
]
