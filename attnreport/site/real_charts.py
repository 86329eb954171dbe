"""The figures a site is drawn with unless a caller passes its own: the chart builders of
``attnreport.charts`` (``chart_source.chart_builders``) with worker processes that make
the last pages ahead (``ahead.start``) when figures are cached and images drawn.
"""

from __future__ import annotations

from dataclasses import replace

from attnreport.site import ahead
from attnreport.site.chart_source import ChartSource, chart_builders


def default_charts(cache: bool = True) -> ChartSource:
    """``chart_builders(cache)``, making pages ahead when ``cache`` is True and the image
    export is installed (a worker's page is its figures and its images)."""
    charts = chart_builders(cache)
    drawn = charts.figure_images is not None
    return replace(charts, ahead=ahead.start if cache and drawn else None)
