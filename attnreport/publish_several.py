"""Draw one site from several models' results folders (``render A B --out SITE`` and the
second half of a ``build`` of several models). Nothing here imports torch."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from attnreport.multi.folders import check_same_sentences
from attnreport.page_choice import parse_pages
from attnreport.publish import RenderSummary, summarize
from attnreport.site.context import SiteOptions


def comparison_site(folders: Sequence[Path], options: SiteOptions) -> Mapping[str, bytes]:
    """Every file of the site of the models in ``folders`` (in that order)."""
    from attnreport.site.comparison import assemble_comparison
    from attnreport.site.source import from_folder

    check_same_sentences(folders)
    return assemble_comparison([from_folder(f) for f in folders], options)


def render_folders(
    folders: Sequence[Path], out: str | Path, options: SiteOptions, force: bool = False
) -> RenderSummary:
    """Render the results in ``folders`` as one site in ``out``; one folder renders as
    ``publish.render_folder`` does (the report of one model, unchanged)."""
    from attnreport.output import check_target, write_site
    from attnreport.publish import render_folder, say_pages
    from attnreport.site.source import from_folder
    from attnreport.usercache import prune

    if len(folders) == 1:
        return render_folder(folders[0], out, options, force)
    out = Path(out)
    check_target(out, force)
    parse_pages(options.pages)
    say_pages(options.pages, from_folder(folders[0]).count)  # the models share the sentences
    site = comparison_site(folders, options)
    written = write_site(site, out, force=force)
    prune()
    return summarize(written, site)
