"""``render``: the site of one study, or the comparison site of several, from Python.

It is ``attnreport render`` of the studies' saved results, not a second renderer: the
studies are saved (``Study.save``) into a temporary folder (several as ``analyze`` of
several models writes them: one folder per model and ``models.json``), drawn by
``publish_several.render_folders`` with the options ``render`` would use, and the folder
is removed. The site is therefore byte for byte the one ``attnreport render`` draws
from the saved results with the same options. Needs no torch.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from attnreport.api.settings import site_values
from attnreport.api.study import Study
from attnreport.errors import AttnReportError
from attnreport.publish import RenderSummary, options_from_json
from attnreport.vocabulary import OPTIONS_NAME


def render(
    studies: Study | Sequence[Study], out: str | Path, force: bool = False, **options: Any
) -> RenderSummary:
    """Write the site of ``studies`` (one ``Study``: its report; several, as ``load`` of
    a comparison gives them or as a list: one site comparing the models, which must have
    read the same sentences) to the folder ``out``, replacing it only when complete.

    ``options``: the site's settings (``title``, ``authors``, ``date``, ``lede``,
    ``afterword``, ``images``, ``png``, ``png_scale``, ``pages``), checked as a settings
    file's are, over those a study loaded from a site's ``results/`` was drawn with.
    ``force``: replace a folder attnreport did not write (its content moved aside).
    Returns what was written: ``out``, pages, figures, files and bytes."""
    from attnreport.multi.folders import MODELS_FILE, models_json, results_folders, unique_slugs
    from attnreport.publish import merged_options
    from attnreport.publish_several import render_folders

    listed = [studies] if isinstance(studies, Study) else list(studies)
    if not listed or not all(isinstance(s, Study) for s in listed):
        raise AttnReportError(
            "render() takes a Study or a list of them (attnreport.analyze, attnreport.load)"
        )
    values = site_values(options)
    base = _stored_options(listed[0])
    with tempfile.TemporaryDirectory(prefix="attnreport-render-") as scratch:
        folder = Path(scratch) / "results"
        if len(listed) == 1:
            listed[0].save(folder)
        else:
            slugs = unique_slugs([s.results.manifest.model.name for s in listed])
            for slug, study in zip(slugs, listed, strict=True):
                study.save(folder / slug)
            (folder / MODELS_FILE).write_bytes(models_json(slugs))
        folders = results_folders([folder])
        return render_folders(folders, out, merged_options(base, **values), force)


def _stored_options(study: Study) -> Any:
    """The options the study's site was drawn with (a site's ``results/``), else None."""
    data = study.files.get(OPTIONS_NAME)
    return None if data is None else options_from_json(data, OPTIONS_NAME)
