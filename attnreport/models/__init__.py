"""Model loading, the family registry and the generic per-layer layout."""

from attnreport.models.families import FAMILIES, SUPPORTED_MODEL_TYPES, Family, family_for
from attnreport.models.loading import LoadedModel, cache_dir, load_model

__all__ = [
    "FAMILIES",
    "SUPPORTED_MODEL_TYPES",
    "Family",
    "LoadedModel",
    "cache_dir",
    "family_for",
    "load_model",
]
