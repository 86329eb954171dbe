"""Small stand-ins for the chart builders, so site tests run on their own.

``demo_charts()`` is a ``ChartSource`` with a few tiny figures built from results (a
per-layer attention heatmap with a layer slider, sorted-head lines, an impact bar chart,
a pooled chart for the index) and a minimal runtime script that draws each figure with
vega-embed. ``site_charts()`` prefers the real ``attnreport.charts`` once it exists.
"""

from __future__ import annotations

import json
from typing import Any

from attnreport.charts.figure import Columns, Figure
from attnreport.site import ChartSource
from attnreport.site.prose import rows

RUNTIME = b"""(function () {
  "use strict";
  function rowsOf(cols) {
    var names = Object.keys(cols), n = names.length ? cols[names[0]].length : 0, out = [];
    for (var i = 0; i < n; i++) {
      var r = {};
      names.forEach(function (k) { r[k] = cols[k][i]; });
      out.push(r);
    }
    return out;
  }
  function draw(el) {
    var key = el.getAttribute("data-key");
    var data = JSON.parse(document.getElementById("ar-data-" + key).textContent);
    var spec = Object.assign({}, data.spec);
    spec.datasets = {};
    spec.datasets[key] = rowsOf(data.inline);
    window.vegaEmbed(el, spec, {actions: false, renderer: "svg"}).catch(function (e) {
      console.error(e);
    });
  }
  function init() { document.querySelectorAll(".ar-chart").forEach(draw); }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
"""


def _heatmap(sentence: dict[str, Any]) -> Figure:
    tokens = sentence["tokens"]["columns"]["token"]
    cols: Columns = {"layer": [], "query": [], "key": [], "p": [], "q_token": [], "k_token": []}
    for layer, heads in enumerate(sentence["attention"]["probs"]):
        for i, row in enumerate(heads[0]):
            for j, p in enumerate(row):
                for name, v in zip(cols, (layer, i, j, p, tokens[i], tokens[j]), strict=True):
                    cols[name].append(v)
    spec = {
        "$schema": "https://vega.github.io/schema/vega-lite/v6.json",
        "data": {"name": "attention-map"},
        "params": [
            {
                "name": "layer",
                "value": 0,
                "bind": {
                    "input": "range",
                    "min": 0,
                    "max": len(sentence["attention"]["probs"]) - 1,
                    "step": 1,
                },
            }
        ],  # fmt: skip
        "transform": [{"filter": "datum.layer == layer"}],
        "mark": "rect",
        "encoding": {
            "x": {"field": "key", "type": "ordinal"},
            "y": {"field": "query", "type": "ordinal"},
            "color": {"field": "p", "type": "quantitative"},
            "tooltip": [{"field": "q_token"}, {"field": "k_token"}, {"field": "p"}],
        },
    }
    chunk = {k: v[:1] for k, v in cols.items()}
    return Figure("attention-map", "Attention of head 0", "Darker cells: more attention.",
                  spec, cols, chunks={"layer-1": chunk}, chunk_param="layer")  # fmt: skip


def _lines(table: dict[str, Any], key: str, title: str) -> Figure:
    data = [r for r in rows(table) if r["statistic"] == "first_focus"]
    cols: Columns = {n: [r[n] for r in data] for n in ("layer", "line", "head", "value")}
    spec = {
        "data": {"name": key},
        "mark": {"type": "line", "point": True},
        "encoding": {
            "x": {"field": "layer", "type": "ordinal"},
            "y": {"field": "value", "type": "quantitative"},
            "detail": {"field": "line"},
            "tooltip": [{"field": "head"}, {"field": "value"}],
        },
    }
    return Figure(key, title, "Each line is one rank of heads.", spec, cols)


def _bars(data: list[dict[str, Any]], key: str, title: str) -> Figure:
    cols: Columns = {n: [r[n] for r in data] for n in ("layer", "magnitude")}
    spec = {
        "data": {"name": key},
        "mark": "bar",
        "encoding": {
            "x": {"field": "layer", "type": "ordinal"},
            "y": {"aggregate": "mean", "field": "magnitude", "type": "quantitative"},
        },
    }
    return Figure(key, title, "Taller bars: bigger changes.", spec, cols)


def sentence_figures(results: dict[str, Any], index: int) -> list[Figure]:
    """Three figures for sentence ``index``: heatmap (part 1), lines (2), impact (3)."""
    s = results["sentences"][index]
    tables = s["tables"]
    return [
        _heatmap(s),
        _lines(tables["focus_sorted"], "focus-sorted", "First-token focus, sorted heads"),
        _bars(rows(tables["block_impact"]), "block-impact", "Attention block impact"),
    ]


def index_figures(results: dict[str, Any]) -> list[Figure]:
    """Two set-wide figures: sorted pooled focus lines and pooled impact."""
    tables = results["set"]["tables"]
    return [
        _lines(tables["focus_sorted"], "set-focus-sorted", "Pooled first-token focus"),
        _bars(rows(tables["impact_pooled"]), "set-impact", "Pooled head impact"),
    ]


def payload(fig: Figure) -> str:
    """The figure's page data as sorted JSON."""
    value = {"spec": fig.spec, "inline": fig.inline, "chunk_param": fig.chunk_param}
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def chunk_files(fig: Figure) -> dict[str, str]:
    """One small script per chunk, as the runtime would load them."""
    return {
        f"{name}.js": f"window.arChunk({json.dumps([fig.key, name])}, "
        f"{json.dumps(cols, sort_keys=True)});\n"
        for name, cols in sorted(fig.chunks.items())
    }


def fake_images(fig: Figure) -> dict[str, bytes]:
    """Tiny stand-in images (real export is the chart engineer's and slow)."""
    svg = f'<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><title>{fig.key}</title></svg>'
    return {"svg": svg.encode(), "png": b"\x89PNG\r\n\x1a\n" + fig.key.encode()}


def demo_charts() -> ChartSource:
    """A self-contained ``ChartSource`` for site tests."""
    return ChartSource(sentence_figures, index_figures, payload, chunk_files, fake_images,
                       lambda: RUNTIME)  # fmt: skip


def site_charts() -> ChartSource:
    """The real chart builders when they are importable, else ``demo_charts()``."""
    try:
        from attnreport.site import default_charts

        return default_charts()
    except (ImportError, AttributeError):
        return demo_charts()


HOSTILE_TOKENS = [
    "</script><img src=x onerror=alert(1)>",
    " \"double\" 'single' `back` «guillemets» „low“",
    " {{ 7*7 }}",
    " {% raw %}",
    " ${alert(2)}",
    " <!--",
    " 😀👩‍👩‍👧",
    " שלום עולם",
    " e\u0301\u0327",
    "\u200b\u200d\ufeff",
    "\u202e",
    "\x00\x01\x1b[31m\x7f\x85",
    "\n\t",
    "",
]


def hostile_study(n_sentences: int = 2) -> dict[str, Any]:
    """A fake study whose last sentence's tokens and text are ``HOSTILE_TOKENS``."""
    from tests.fixtures.fake_results import (
        fake_interventions,
        fake_manifest,
        fake_sentence,
        fake_set,
    )

    n, heads = 3, 2
    sentences = [fake_sentence(k, n_layers=n, n_heads=heads) for k in range(n_sentences - 1)]
    tokens = HOSTILE_TOKENS
    sentences.append(fake_sentence(n_sentences - 1, n_layers=n, n_heads=heads,
                                   n_tokens=len(tokens), tokens=tokens))  # fmt: skip
    return {
        "manifest": fake_manifest(sentences, n_layers=n, n_heads=heads, model_id="</title>x"),
        "set": fake_set(sentences),
        "sentences": sentences,
        "interventions": fake_interventions(sentences, n_layers=n, n_heads=heads),
    }
