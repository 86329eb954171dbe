"""The static site: page contexts, templates, assembly in memory, and the one writer.

``assemble_site(results, SiteOptions(...))`` returns ``{relative path: bytes}``;
``write_site(files, out_dir, force)`` puts them on disk without ever leaving a half site.
"""

from attnreport.site.assemble import ChartSource, assemble_site, default_charts
from attnreport.site.context import SiteOptions, date_from_env
from attnreport.site.write import write_site

__all__ = [
    "ChartSource",
    "SiteOptions",
    "assemble_site",
    "date_from_env",
    "default_charts",
    "write_site",
]
