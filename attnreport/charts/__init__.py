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

from attnreport.charts import attention, block_impact, breakdown, focus, impact, interventions
from attnreport.charts.figure import Columns, Figure
from attnreport.results import Interventions, Manifest, SentenceResults, SetResults

__all__ = ["Columns", "Figure", "index_figures", "sentence_figures"]


def sentence_figures(
    sentence: SentenceResults,
    interventions_results: Interventions | None,
    manifest: Manifest,
    sentences: Sequence[SentenceResults] | None = None,
) -> list[Figure]:
    """The figures of one sentence page, in study order (see the module docstring).

    interventions_results: pass it on the page of the sentence it was run on
    (``scaling.sentence``), else None; sentences (optional): every sentence's results,
    so that the mean grid's tooltips can name the tokens of the other inputs.
    """
    has_map = sentence.attention is not None  # None past ``map_tokens`` tokens
    figures = [
        *([attention.attention_map_figure(sentence)] if has_map else []),
        breakdown.breakdown_figure(sentence, manifest),
        breakdown.bias_position_figure(sentence, manifest),
        *(focus.focus_figure(sentence, statistic) for statistic in focus.STATISTICS),
        impact.histogram_figure(sentence, "magnitude"),
        impact.histogram_figure(sentence, "orientation"),
        impact.scatter_figure(sentence),
        block_impact.block_impact_figure(sentence),
    ]
    if interventions_results:
        iv = interventions_results
        figures.append(interventions.scaling_figure(iv, sentence, manifest, sentences))
        figures.append(interventions.mean_figure(iv, sentence, manifest, sentences))
    return figures


def index_figures(
    set_results: SetResults, manifest: Manifest, sentences: Sequence[SentenceResults]
) -> list[Figure]:
    """The index page's figures: pooled focus (self, first token, concentration), head impact."""
    n_sentences = len(sentences) or len(manifest.sentences)
    return [
        *(focus.pooled_focus_figure(set_results, s, n_sentences) for s in focus.STATISTICS),
        block_impact.pooled_impact_figure(set_results),
    ]
