"""An Altair renderer for notebooks, ``attnreport``: the Vega-Lite bundle and the HTML.

A ``Study.figure`` is an ordinary Altair chart, drawn by whichever renderer Altair has
enabled. Altair 6's own choices each miss some frontends: its ``mimetype`` renderer
hands over the spec as ``application/vnd.vegalite.v6.json``, which nbformat refuses to
store as JSON (only ``+json`` types may hold an object: the notebook then fails to
validate) and which JupyterLab 4 and VS Code do not draw; its default, ``html``, draws
wherever vega-embed can be loaded from its CDN. This renderer gives, in one display
bundle, the spec as ``application/vnd.vegalite.vN+json`` (N: the Vega-Lite major version
Altair writes; the JSON type that Jupyter's own Vega-Lite renderers have used since
v2) and the HTML of Altair's ``html`` renderer; each frontend draws the richest it
knows::

    import altair as alt
    alt.renderers.enable("attnreport")

It is registered with Altair through the package's entry points (``pyproject.toml``),
so enabling it needs no import of attnreport.
"""

from __future__ import annotations

import importlib
from typing import Any


def _display() -> Any:
    """The installed Altair's display module (``altair.vegalite.vN.display``)."""
    import altair as alt

    return importlib.import_module(f"altair.vegalite.v{_major(alt.SCHEMA_VERSION)}.display")


def _major(version: str) -> str:
    return version.lstrip("v").split(".")[0]


def mime_type() -> str:
    """``application/vnd.vegalite.vN+json`` for the Vega-Lite Altair writes (N = 6 for
    Altair 6)."""
    import altair as alt

    return f"application/vnd.vegalite.v{_major(alt.SCHEMA_VERSION)}+json"


def notebook_renderer(spec: dict[str, Any], **metadata: Any) -> tuple[dict, dict]:
    """(display bundle, metadata) of a Vega-Lite spec: the spec as ``mime_type()``, the
    HTML of Altair's ``html`` renderer, and Altair's ``text/plain`` line."""
    from altair.utils.display import default_renderer_base

    display = _display()
    bundle, meta = default_renderer_base(spec, mime_type(), display.DEFAULT_DISPLAY, **metadata)
    html = display.html_renderer(spec, **metadata)
    return {**bundle, **(html[0] if isinstance(html, tuple) else html)}, meta
