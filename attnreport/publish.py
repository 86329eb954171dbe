"""Draw a site from results: ``attnreport render`` and the second half of ``build``.

Rendering is a pure function of the results files and the site options: ``build``
analyses into a results folder and renders from it as ``render`` does, so a site built
straight away equals one rendered later from the folder. The set-wide results are read
first and each sentence only when its page is drawn (``site.source``), so memory does
not grow with the corpus. The site ships what it was drawn from: ``results/`` (the
results files) and ``results/render.json`` (the options, ``--pages`` included), so
``render SITE/results`` rebuilds it byte for byte. Nothing here imports torch or
transformers.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from attnreport.errors import AttnReportError
from attnreport.page_choice import pages_note, parse_pages
from attnreport.site.context import UNSTORED, SiteOptions
from attnreport.vocabulary import OPTIONS_NAME

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RenderSummary:
    out: Path
    pages: int
    figures: int
    files: int
    bytes: int


def options_from_json(data: bytes, where: str) -> SiteOptions:
    try:
        values = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise AttnReportError(f"{where} is truncated or not valid JSON ({err})") from err
    known = {f.name for f in fields(SiteOptions)} - UNSTORED
    if not isinstance(values, dict) or set(values) - known:
        raise AttnReportError(f"{where} holds unknown site options; expected {sorted(known)}")
    if "authors" in values:
        values["authors"] = tuple(values["authors"])
    if "notes" in values:
        values["notes"] = tuple(tuple(pair) for pair in values["notes"])
    if "png" not in values:  # written before the setting existed, when every image had a PNG
        values["png"] = values.get("images", True)
    if "png_scale" not in values and values["png"]:  # drawn when every PNG was 1x
        values["png_scale"] = 1.0
    if not isinstance(values.get("pages", "all"), str):
        raise AttnReportError(f'{where}: pages must be a string like "0,5,10-12"')
    return SiteOptions(**values)


def summarize(out: Path, files: Mapping[str, bytes]) -> RenderSummary:
    """Pages (of every model, in a site of several), figures, files and bytes of a written
    site (sizes read from ``out``, so a lazy ``files`` mapping is not read again)."""
    pages = [n for n in files if n.endswith(".html") and not n.endswith("404.html")]
    figures = sum(files[n].count(b'class="ar-chart"') for n in pages)
    size = sum(out.joinpath(*name.split("/")).stat().st_size for name in files)
    return RenderSummary(out, len(pages), figures, len(files), size)


def render_folder(
    results_dir: str | Path, out: str | Path, options: SiteOptions, force: bool = False
) -> RenderSummary:
    """Render the results in ``results_dir`` as a site in ``out``.

    The set-wide results are read first and each sentence when its page is drawn, so
    memory does not grow with the corpus; the shipped ``results/`` files are copied
    while the new site is written beside ``out``, so ``out`` may be the site that holds
    them (``render site/results --out site``): it is replaced only when complete.
    Then the figure and image caches are pruned to their limit (``usercache.prune``).
    """
    from attnreport.output import check_target, write_site
    from attnreport.site.assemble import assemble_site
    from attnreport.site.source import from_folder
    from attnreport.usercache import prune

    out = Path(out)
    check_target(out, force)
    parse_pages(options.pages)  # a bad choice fails before anything is read
    source = from_folder(results_dir)
    say_pages(options.pages, source.count)
    site = assemble_site(source, options)
    written = write_site(site, out, force=force)
    prune()
    return summarize(written, site)


def say_pages(pages: str, count: int) -> None:
    """A warning line when ``pages`` asks for more pages than the ``count`` sentences have."""
    note = pages_note(pages, count)
    if note:
        log.warning(note)


def stored_options(results_dir: str | Path) -> SiteOptions | None:
    """The options a site's ``results/`` was rendered with (None for analyze output)."""
    path = Path(results_dir) / OPTIONS_NAME
    return options_from_json(path.read_bytes(), str(path)) if path.is_file() else None


def merged_options(base: SiteOptions | None, **overrides: Any) -> SiteOptions:
    """``base`` (or the defaults) with every override that is not None."""
    values = asdict(base or SiteOptions())
    values.update({k: v for k, v in overrides.items() if v is not None})
    values["authors"] = tuple(values["authors"])
    values["notes"] = tuple(tuple(pair) for pair in values["notes"])
    return SiteOptions(**values)
