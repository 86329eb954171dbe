"""Vega-Lite spec tools the builders share: the chart to ``Figure`` assembly, axes, widgets, theme, renderer choice, caption notes."""
