"""The quick-start notebook (``examples/quickstart.ipynb``) runs, in order, in a real Jupyter
kernel (nbclient and ipykernel, as a user's Jupyter runs it) on the default model, read by
transformers from its GGUF file: its figure cells display the Vega-Lite bundle (with the
HTML beside it), its table cell a DataFrame with the schema's columns, and it leaves a site
and a results folder that ``attnreport.load`` reads back into the same figures.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

import attnreport
from attnreport.results.tables import FocusPooledTable
from tests.patience import patience

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "examples" / "quickstart.ipynb"
VEGALITE = re.compile(r"^application/vnd\.vegalite\.v[56][+.]json$")


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    """(the notebook after running every cell, the folder it ran in)."""
    folder = tmp_path_factory.mktemp("quickstart")
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    client = NotebookClient(
        notebook,
        timeout=patience(1500),
        kernel_name="python3",
        resources={"metadata": {"path": str(folder)}},
    )
    client.execute()
    return notebook, folder


def outputs_of(notebook, snippet: str) -> list[dict]:
    """The displayed outputs of the one code cell whose source holds ``snippet``."""
    cells = [c for c in notebook.cells if c.cell_type == "code" and snippet in c.source]
    assert len(cells) == 1, snippet
    return [o for o in cells[0].outputs if o.output_type in ("display_data", "execute_result")]


def vegalite(output: dict) -> dict:
    """The Vega-Lite spec of a displayed figure (its bundle's Vega-Lite type)."""
    kinds = [k for k in output["data"] if VEGALITE.match(k)]
    assert len(kinds) == 1, list(output["data"])
    assert "text/html" in output["data"]  # what JupyterLab and VS Code draw
    spec = output["data"][kinds[0]]
    return spec if isinstance(spec, dict) else json.loads(spec)


@pytest.mark.slow
@pytest.mark.default_model
def test_the_figure_cells_display_the_vega_lite_bundle(executed):
    notebook, folder = executed
    specs = {
        snippet: vegalite(only)
        for snippet in ('"attention-map"', '"set-first-focus"', '"scaling-grid"')
        for only in outputs_of(notebook, snippet)
    }
    assert len(specs) == 3
    saved = attnreport.load(folder / "quickstart-results")
    params = {p["name"]: p for p in specs['"attention-map"']["params"]}
    layer, head = params["layer"]["value"], params["head"]["value"]
    # the head the notebook picked is the one with the highest pooled first-token focus
    focus = saved.table("focus_pooled")
    first = focus[focus.statistic == "first_focus"]
    assert first.value.max() == first[(first.layer == layer) & (first["head"] == head)].value.max()
    # the results it saved give the same charts
    again = saved.figure("attention-map", sentence=1, layer=layer, head=head)
    assert specs['"attention-map"'] == again.to_dict()
    assert specs['"scaling-grid"'] == saved.figure("scaling-grid").to_dict()


@pytest.mark.slow
@pytest.mark.default_model
def test_the_table_cell_displays_a_dataframe_and_the_site_is_written(executed):
    notebook, folder = executed
    (table,) = outputs_of(notebook, "first.head()")
    html = table["data"]["text/html"]
    assert 'class="dataframe"' in html
    head = html[html.index("<thead>") : html.index("</thead>")]
    headers = re.findall(r"<th>([a-z_0-9]+)</th>", head)
    assert headers == list(FocusPooledTable.columns_of())
    index = (folder / "quickstart-site" / "index.html").read_text(encoding="utf-8")
    assert "SmolLM2 in a notebook" in index
    assert (folder / "quickstart-site" / "results" / "manifest.json").is_file()
    shown = outputs_of(notebook, "study = attnreport.analyze")  # progress bars, then the study
    (study,) = [o for o in shown if o["output_type"] == "execute_result"]
    assert "3 sentences, 30 layers x 9 heads" in study["data"]["text/plain"]
