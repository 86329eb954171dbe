"""Render page contexts to HTML strings with the package's Jinja templates.

One ``Environment`` loads every template from ``attnreport.templates`` (the top-level
``templates/`` folder, shipped inside the wheel), with autoescape on and
``StrictUndefined`` so a missing value fails the build instead of printing nothing.
Nothing here reads results or writes files.
"""

from __future__ import annotations

import functools
import importlib.util
import json
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import quote

import jinja2
from markupsafe import Markup

import attnreport
from attnreport.site.context import IndexContext, PageMeta, SentencePageContext
from attnreport.text import escape_script

MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)


def script_json(value: Any) -> Markup:
    """JSON text (or a value to dump) made safe inside ``<script type="application/json">``
    by ``attnreport.text.escape_script``, the one implementation."""
    text = (
        value
        if isinstance(value, str)
        else json.dumps(
            value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False
        )
    )
    return Markup(escape_script(text))


def long_date(iso: str) -> str:
    """``2026-11-21`` -> ``21 November 2026`` (no locale); other text is shown as it is."""
    try:
        year, month, day = (int(x) for x in iso.split("-"))
        return f"{day} {MONTHS[month - 1]} {year}"
    except (ValueError, IndexError):
        return iso


@functools.cache
def templates_root() -> Path:
    """The folder of the templates: in a source checkout (``pyproject.toml`` beside the
    imported package), its top-level ``templates/``; else the package
    ``attnreport.templates`` (in the wheel; an editable install maps it to the top-level
    ``templates/``). The checkout comes first because a checkout used with ``PYTHONPATH=.``
    beside an editable install of another one (a second git worktree) would otherwise
    draw its pages with the other checkout's templates."""
    checkout = Path(attnreport.__file__).resolve().parent.parent / "templates"
    if (checkout / "__init__.py").is_file() and (checkout.parent / "pyproject.toml").is_file():
        return checkout
    spec = importlib.util.find_spec("attnreport.templates")
    if spec is not None and spec.origin and spec.origin.endswith("__init__.py"):
        return Path(spec.origin).parent
    raise RuntimeError("attnreport's templates are missing; reinstall attnreport")


@functools.cache
def environment() -> jinja2.Environment:
    """The one template environment (cached): package templates, autoescape, strict."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_root())),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["script_json"] = script_json
    env.filters["long_date"] = long_date
    return env


def _render(name: str, **values: Any) -> str:
    return environment().get_template(name).render(**values)


def render_index(ctx: IndexContext) -> str:
    """The index page's HTML."""
    charts = any(s.figures for s in ctx.sections)
    return _render("index.html", ctx=ctx, meta=ctx.meta, charts=charts)


def render_sentence(ctx: SentencePageContext) -> str:
    """One sentence page's HTML."""
    charts = any(s.figures for s in ctx.sections)
    return _render("sentence.html", ctx=ctx, meta=ctx.meta, charts=charts)


def render_404(meta: PageMeta | None = None) -> str:
    """The page GitHub Pages shows for a missing address.

    GitHub Pages serves it at the missing address, at any folder depth, where relative
    links to ``assets/`` would not resolve; so its stylesheet is inlined, and its icon is
    a data URL (without one the browser asks the server for /favicon.ico).
    """
    meta = meta or PageMeta(
        site_title="attnreport",
        date=None,
        authors=(),
        model_name="",
        version=attnreport.__version__,
    )
    meta = replace(meta, asset_prefix="", up=None)
    css = template_asset("style.css").decode("utf-8")
    if "</style" in css.lower():
        raise ValueError("style.css must not contain '</style'")
    icon = "data:image/svg+xml," + quote(template_asset("favicon.svg").decode("utf-8").strip())
    return _render("404.html", meta=meta, charts=False, inline_css=css, inline_icon=icon)


def template_asset(name: str) -> bytes:
    """The bytes of ``templates/assets/NAME`` (the stylesheet)."""
    return (templates_root() / "assets" / name).read_bytes()
