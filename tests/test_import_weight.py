"""Commands load only what they use: the analysis path never imports the site's renderers."""

from __future__ import annotations

import subprocess
import sys

# Chart and page code: Altair, vl-convert and our own renderers. (jinja2 itself is not on
# the list: transformers imports it, and analyze must load transformers for the model.)
HEAVY_FOR_ANALYZE = (
    "altair",
    "vl_convert",
    "attnreport.charts",
    "attnreport.site.render",
    "attnreport.site.pages",
)


def modules_after(code: str, names: tuple[str, ...]) -> list[str]:
    """Which of ``names`` are in ``sys.modules`` after a fresh interpreter runs ``code``."""
    probe = f"{code}\nimport sys\nprint(' '.join(n for n in {names!r} if n in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return out.stdout.split()


def test_analyze_path_does_not_import_charts_or_templates():
    # What `attnreport analyze` imports: the study, and the writer that checks its folder.
    code = "import attnreport.build, attnreport.site.write, attnreport.study"
    assert modules_after(code, HEAVY_FOR_ANALYZE) == []


def test_site_package_still_exports_its_names():
    code = "from attnreport.site import SiteOptions, assemble_site, write_site"
    assert modules_after(code, ("jinja2",)) == ["jinja2"]  # assemble_site needs the templates
