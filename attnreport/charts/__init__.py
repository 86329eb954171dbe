"""Chart builders: typed results (``attnreport.results``) -> ``Figure`` values.

Public API:
- ``sentence_figures(sentence, interventions, manifest)``: the figures of a sentence
  page in study order (1 attention map, 2 attention breakdown, 3 bias vs position,
  4-6 self focus, first-token focus, concentration, 7-8 update magnitude and orientation,
  9 orientation vs magnitude, 10 impact by position, 11 scaling grid, 12 mean grid);
  11 and 12 only when ``interventions`` is given.
- ``index_figures(set_results, manifest, sentences)``: pooled self focus, first-token
  focus, concentration, and head impact.
- ``embed.figure_payload``, ``embed.chunk_files``, ``embed.runtime_js``: page serialisation.
- ``images.export_images``: static SVG and PNG of a figure's default view.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from attnreport.charts.figure import Columns, Figure
from attnreport.results import Interventions, Manifest, Results, SentenceResults, SetResults

_FROM_REGISTRY = ("FIGURES", "FigureEntry", "build_figures", "page_inputs")


def __getattr__(name: str) -> Any:
    """The registry's names, imported when first used: reading cached figures (an
    unchanged render) then never imports the builders, nor Altair."""
    if name in _FROM_REGISTRY:
        from attnreport.charts import registry

        return getattr(registry, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "FIGURES",
    "Columns",
    "Figure",
    "FigureEntry",
    "build_figures",
    "index_figures",
    "page_inputs",
    "sentence_figures",
]


def sentence_figures(
    sentence: SentenceResults,
    interventions_results: Interventions | None,
    manifest: Manifest,
    sentences: Sequence[SentenceResults] | None = None,
) -> list[Figure]:
    """The figures of one sentence page, in registry order (``charts.registry``).

    interventions_results: given, the page shows the intervention grids; sentences
    (optional): every sentence's results, so the mean grid can name other inputs' tokens.
    """
    from attnreport.charts.registry import Inputs, build_figures

    results = Results(manifest, tuple(sentences or (sentence,)), None, interventions_results)  # type: ignore[arg-type]
    inputs = Inputs(results, sentence, interventions_results is not None)
    return [placed.figure for placed in build_figures(inputs)]


def index_figures(
    set_results: SetResults, manifest: Manifest, sentences: Sequence[SentenceResults]
) -> list[Figure]:
    """The index page's figures: pooled focus (self, first token, concentration), head impact."""
    from attnreport.charts.registry import Inputs, build_figures

    results = Results(manifest, tuple(sentences), set_results, None)
    return [placed.figure for placed in build_figures(Inputs(results))]
