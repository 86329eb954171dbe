"""Small stand-ins for the chart builders, so site tests run on their own.

``demo_charts()`` is a ``ChartSource`` with a few tiny figures built from results (a
per-layer attention heatmap with a layer slider whose other layers load as chunk files,
sorted-head lines, an impact bar chart, two pooled charts for the index), serialised
and drawn by the real ``attnreport.charts.export.embed`` and ``runtime.js``, with stand-in
images. ``site_charts()`` prefers the real chart builders once they exist.
"""

from __future__ import annotations

from typing import Any

from attnreport.charts.export import embed
from attnreport.charts.figure import Columns, Figure
from attnreport.charts.registry import FigureEntry, Placed
from attnreport.results import Results, SentenceResults
from attnreport.site import ChartSource
from attnreport.site.words.prose import rows


def _heatmap(sentence: SentenceResults) -> Figure:
    """Head 0's attention, one chunk per layer, chosen by a ``layer`` slider."""
    tokens = sentence.tokens.token.tolist()
    chunks: dict[str, Columns] = {}
    for layer, heads in enumerate(sentence.attention.probs):
        cols: Columns = {"layer": [], "query": [], "key": [], "p": [], "q_token": [], "k_token": []}
        for i, row in enumerate(heads[0]):
            for j, p in enumerate(row):
                for name, v in zip(cols, (layer, i, j, p, tokens[i], tokens[j]), strict=True):
                    cols[name].append(v)
        chunks[f"l{layer}"] = cols
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
                    "max": len(chunks) - 1,
                    "step": 1,
                    "name": "layer ",
                },
            }
        ],  # fmt: skip
        "transform": [{"filter": "datum.layer == layer"}],
        "mark": "rect",
        "encoding": {
            "x": {"field": "key", "type": "ordinal"},
            "y": {"field": "query", "type": "ordinal"},
            "color": {"field": "p", "type": "quantitative", "scale": {"domain": [0, 1]}},
            "tooltip": [{"field": "q_token"}, {"field": "k_token"}, {"field": "p"}],
        },
    }
    return Figure(
        "attention-map", "Attention of head 0", "Darker cells: more attention.", spec,
        chunks["l0"], chunks=chunks, chunk_param="layer",
        chunk_names={str(i): f"l{i}" for i in range(len(chunks))}, inline_chunk="l0",
    )  # fmt: skip


def _lines(table: Any, key: str, title: str) -> Figure:
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


def _placed(fig: Figure, page: str, part: str, reads: str, lines: bool = False) -> Placed:
    entry = FigureEntry(fig.key, page, part, (reads,), lambda _i: fig, sorted_lines=lines)
    return Placed(entry, fig)


def sentence_figures(results: Results, index: int) -> list[Placed]:
    """Three figures for sentence ``index``: heatmap (part 1), lines (2), impact (3)."""
    s = results.sentences[index]
    lines = _lines(s.tables.focus_sorted, "focus-sorted", "First-token focus, sorted heads")
    bars = _bars(rows(s.tables.block_impact), "block-impact", "Attention block impact")
    return [
        _placed(_heatmap(s), "sentence", "focus", "sentence:attention"),
        _placed(lines, "sentence", "layers", "sentence:focus_sorted", lines=True),
        _placed(bars, "sentence", "impact", "sentence:block_impact"),
    ]


def index_figures(results: Results, pages: tuple = ()) -> list[Placed]:
    """Two set-wide figures: sorted pooled focus lines and pooled impact (``pages``, the
    sentence pages the real ones link to, are not linked here)."""
    lines = _lines(results.set.focus_sorted, "set-focus-sorted", "Pooled first-token focus")
    bars = _bars(rows(results.set.impact_pooled), "set-impact", "Pooled head impact")
    return [
        _placed(lines, "index", "set", "set:focus_sorted", lines=True),
        _placed(bars, "index", "set", "set:impact_pooled"),
    ]


def fake_images(fig: Figure) -> dict[str, bytes]:
    """Tiny stand-in images (real export is the chart engineer's and slow)."""
    svg = f'<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><title>{fig.key}</title></svg>'
    return {"svg": svg.encode(), "png": b"\x89PNG\r\n\x1a\n" + fig.key.encode()}


def demo_charts() -> ChartSource:
    """Demo figures with the real payload, chunk files and runtime of ``attnreport.charts``."""
    return ChartSource(
        sentence_figures, index_figures, embed.figure_payload, embed.chunk_files, fake_images,
        lambda: embed.runtime_js().encode("utf-8"),
    )  # fmt: skip


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
