"""A small HTML scanner for site tests (standard library ``html.parser`` only).

``scan(html)`` collects what the tests check: every ``href``/``src``, element ids,
``<h1>`` count, figure numbers, footnote references, notes and back-links, the text and
title of token spans, JSON script bodies, and any ``on*`` event attribute.
"""

from __future__ import annotations

import json
import posixpath
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any
from urllib.parse import urlsplit


@dataclass
class Page:
    urls: list[tuple[str, str]] = field(default_factory=list)  # (attribute, value)
    ids: list[str] = field(default_factory=list)
    h1: int = 0
    figure_numbers: list[int] = field(default_factory=list)  # within the page: S3.2 -> 2
    figure_labels: list[str] = field(default_factory=list)  # as written: "2", "S3.2"
    note_refs: list[str] = field(default_factory=list)  # "#fn-N" from <a id="fnref-N">
    notes: list[str] = field(default_factory=list)  # ids "fn-N" of <li>
    back_links: list[str] = field(default_factory=list)  # "#fnref-N"
    tokens: list[tuple[str, str]] = field(default_factory=list)  # (text, title)
    json_scripts: dict[str, Any] = field(default_factory=dict)  # id -> parsed JSON
    scripts: list[dict[str, str]] = field(default_factory=list)  # attributes of <script>
    event_attrs: list[str] = field(default_factory=list)
    chunk_dirs: list[str] = field(default_factory=list)


class _Scanner(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.page = Page()
        self._capture: str | None = None
        self._text: list[str] = []
        self._attrs: dict[str, str] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        p = self.page
        p.urls += [(k, a[k]) for k in ("href", "src") if k in a]
        p.ids += [a["id"]] if "id" in a else []
        p.event_attrs += [f"{tag} {k}" for k in a if k.startswith("on")]
        p.h1 += tag == "h1"
        cls = a.get("class", "").split()
        if tag == "a" and a.get("id", "").startswith("fnref-"):
            p.note_refs.append(a.get("href", ""))
        if tag == "a" and a.get("href", "").startswith("#fnref-"):
            p.back_links.append(a["href"])
        if tag == "li" and a.get("id", "").startswith("fn-"):
            p.notes.append(a["id"])
        if "data-chunks" in a:
            p.chunk_dirs.append(a["data-chunks"])
        if tag == "script":
            p.scripts.append(a)
        if tag == "span" and "tok" in cls:
            self._start("tok", a)
        elif tag == "span" and "fignum" in cls:
            self._start("fignum", a)
        elif tag == "script" and a.get("type") == "application/json":
            self._start("json", a)

    def _start(self, what: str, attrs: dict[str, str]) -> None:
        self._capture, self._text, self._attrs = what, [], attrs

    def handle_data(self, data: str) -> None:
        if self._capture:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if not self._capture or tag not in ("span", "script"):
            return
        text, what = "".join(self._text), self._capture
        self._capture = None
        if what == "tok":
            self.page.tokens.append((text, self._attrs.get("title", "")))
        elif what == "fignum":
            label = text.removeprefix("Figure ").rstrip(".")
            self.page.figure_labels.append(label)
            self.page.figure_numbers.append(int(label.rsplit(".", 1)[-1]))
        else:
            self.page.json_scripts[self._attrs.get("id", "")] = json.loads(text)


def scan(html: str) -> Page:
    """Everything the tests check about one page."""
    scanner = _Scanner()
    scanner.feed(html)
    scanner.close()
    return scanner.page


def link_problems(page_path: str, page: Page, files: dict[str, bytes]) -> list[str]:
    """Links that leave the site or point at nothing; empty when every link resolves."""
    problems = []
    for attr, url in page.urls:
        parts = urlsplit(url)
        if parts.scheme == "data" and url.startswith("data:image/"):
            continue  # an inline image (the 404 page's icon): nothing to fetch or resolve
        if parts.scheme or parts.netloc or url.startswith("/") or "\\" in url:
            problems.append(f"{page_path}: external or absolute {attr}={url!r}")
            continue
        if not parts.path:
            if parts.fragment not in page.ids:
                problems.append(f"{page_path}: no element for {url!r}")
            continue
        target = posixpath.normpath(posixpath.join(posixpath.dirname(page_path), parts.path))
        if target not in files:
            problems.append(f"{page_path}: {attr}={url!r} resolves to missing {target!r}")
    for folder in page.chunk_dirs:
        if not folder.endswith("/") or not any(name.startswith(folder) for name in files):
            problems.append(f"{page_path}: data-chunks={folder!r} holds no files")
    return problems
