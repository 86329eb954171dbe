"""The author's own words (``lede``, ``afterword``) as HTML: Markdown with raw HTML off.

CommonMark through markdown-it-py with ``html`` disabled: ``<script>`` in the text is
shown as the text ``<script>``, never run, and links keep only safe schemes (markdown-it's
own ``validateLink``). The result is trusted by the templates (``|safe``) because every
character of the author's text has been escaped by the renderer.
"""

from __future__ import annotations

from functools import cache

from markdown_it import MarkdownIt


@cache
def _renderer() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})


def markdown_html(text: str | None) -> str:
    """HTML of the Markdown ``text`` (block elements, ending in a newline); "" for None."""
    return _renderer().render(text) if text else ""
