"""The static site: page contexts, templates, assembly in memory, and the one writer.

``assemble_site(results, SiteOptions(...))`` returns ``{relative path: bytes}``;
``write_site(files, out_dir, force)`` puts them on disk without ever leaving a half site.

The names below are imported on first use, so that ``attnreport.output`` (which
``analyze`` uses to check and write its output folder) does not pull in the chart
builders (Altair) and the templates (Jinja2).
"""

from __future__ import annotations

import importlib
from typing import Any

_HOMES = {
    "ChartSource": "attnreport.site.chart_source",
    "assemble_site": "attnreport.site.assemble",
    "default_charts": "attnreport.site.real_charts",
    "SiteOptions": "attnreport.site.context",
    "date_from_env": "attnreport.site.context",
    "write_site": "attnreport.output",
}

__all__ = [
    "ChartSource",
    "SiteOptions",
    "assemble_site",
    "date_from_env",
    "default_charts",
    "write_site",
]


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name]), name)
