"""An Altair renderer for notebooks, ``attnreport``: the Vega-Lite bundle and the HTML.

A ``Study.figure`` is an ordinary Altair chart, drawn by whichever renderer Altair has
enabled. Altair 6's own choices each miss some frontends: its ``mimetype`` renderer
hands over the Vega-Lite 6 bundle (``application/vnd.vegalite.v6.json``), which nteract
draws itself, offline, but JupyterLab 4 and VS Code do not draw yet; its default,
``html``, draws everywhere that can load vega-embed from its CDN. This renderer gives
both in one display bundle, and each frontend draws the richest it knows::

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

    major = alt.SCHEMA_VERSION.lstrip("v").split(".")[0]
    return importlib.import_module(f"altair.vegalite.v{major}.display")


def notebook_renderer(spec: dict[str, Any], **metadata: Any) -> tuple[dict, dict]:
    """(display bundle, metadata) of a Vega-Lite spec: Altair's Vega-Lite mimetype bundle
    (with its ``text/plain`` line) plus the ``text/html`` of its ``html`` renderer."""
    from altair.utils.display import default_renderer_base

    display = _display()
    bundle, meta = default_renderer_base(
        spec, display.VEGALITE_MIME_TYPE, display.DEFAULT_DISPLAY, **metadata
    )
    html = display.html_renderer(spec, **metadata)
    return {**bundle, **(html[0] if isinstance(html, tuple) else html)}, meta
