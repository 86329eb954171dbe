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
    code = "import attnreport.build, attnreport.output, attnreport.study"
    assert modules_after(code, HEAVY_FOR_ANALYZE) == []


def test_site_package_still_exports_its_names():
    code = "from attnreport.site import SiteOptions, assemble_site, write_site"
    assert modules_after(code, ("jinja2",)) == ["jinja2"]  # assemble_site needs the templates


def test_a_render_from_the_figure_cache_does_not_import_altair(tmp_path):
    """Unchanged figures come from the figure cache; only building one loads the builders
    and Altair (about a second of every render and build)."""
    from attnreport.results.io import dump
    from tests.fixtures.fake_results import fake_study, typed

    results = tmp_path / "results"
    for name, data in dump(typed(fake_study())).items():
        (results / name).parent.mkdir(parents=True, exist_ok=True)
        (results / name).write_bytes(data)
    code = (
        "import os, sys\n"
        f"os.environ['ATTNREPORT_CACHE'] = {str(tmp_path / 'cache')!r}\n"
        "from attnreport.publish import render_folder\n"
        "from attnreport.site import SiteOptions\n"
        f"render_folder({str(results)!r}, {str(tmp_path / 'site')!r}, SiteOptions(images=False), True)\n"
        "first = 'altair' in sys.modules\n"
    )
    assert modules_after(code + "assert first\n", ("altair",)) == ["altair"]  # built: cold cache
    assert (
        modules_after(
            code + "assert not first\n", ("altair", "attnreport.charts.figures.attention")
        )
        == []
    )
