"""Analyse several models for one report: ``analyze`` and ``build`` with more than one
``--model`` (or ``models = [...]``).

Each model is analysed as ``analyze`` does alone, into ``OUT/SLUG/``, and ``OUT/models.json``
lists them in order (``folders``). The intervention layers are matched by relative depth:
the first model's layer is its own (``intervene_layer``, else its strongest first-token
layer); every other model intervenes at its layer nearest that depth, and its manifest
records that depth (``intervene_depth``) beside the layer, so its pages can say why.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from attnreport.analyses.layer_choice import depth, matched_layer
from attnreport.build import (
    BuildSummary,
    Progress,
    StageClock,
    built,
)
from attnreport.config import Settings
from attnreport.corpus import CorpusOptions, run_corpus
from attnreport.errors import AttnReportError
from attnreport.multi.folders import MODELS_FILE, models_json, unique_slugs
from attnreport.output import check_output, input_paths


def _quiet(_stage: str, _done: int, _total: int) -> None:
    return None


def model_inputs(settings: Settings) -> list[Path]:
    """Every model path and the sentences file: what an output folder must not hold."""
    paths = []
    for name in settings.model_names():
        paths += input_paths(replace(settings, model=name, models=None))
    return paths


def intervention_layer(folder: Path) -> tuple[int, int]:
    """(intervention layer, number of layers) of a finished results folder."""
    from attnreport.site.source import from_folder

    source = from_folder(folder)
    if source.interventions is None:
        raise AttnReportError(f"{folder} holds no interventions to match the others' layers to")
    return source.interventions.layer, source.manifest.model.n_layers


def analyze_models(
    settings: Settings,
    options: CorpusOptions | None = None,
    force: bool = False,
    progress: Progress = _quiet,
) -> list[Path]:
    """Analyse every model of ``settings`` into ``settings.out/SLUG``; their folders, in order."""
    from attnreport.models.attending import nearest_attention_layer
    from attnreport.models.loading import resolve_source
    from attnreport.session import session_for
    from attnreport.vocabulary import MARKER

    out = Path(settings.out)
    check_output(out, model_inputs(settings), force)
    names = settings.model_names()
    slugs = unique_slugs([resolve_source(name).display_name for name in names])
    out.mkdir(parents=True, exist_ok=True)
    folders, reference = [], None
    for name, slug in zip(names, slugs, strict=True):
        one = replace(settings, model=name, models=None, out=str(out / slug))
        session = None
        if reference is not None:
            session = session_for(one)
            block = matched_layer(reference, session.n_blocks)  # a hybrid: nearest attention
            layer = nearest_attention_layer(session.specs, block)
            one = replace(one, intervene_layer=layer, intervene_depth=reference)  # the why
        run_corpus(one, options or CorpusOptions(), force, progress, session)
        folders.append(out / slug)
        if reference is None:
            layer, n_layers = intervention_layer(out / slug)
            reference = depth(layer, n_layers)
    (out / MARKER).write_bytes(b"attnreport results\n")
    staged = out / f".{MODELS_FILE}.{os.getpid()}"
    staged.write_bytes(models_json(slugs))
    staged.replace(out / MODELS_FILE)
    return folders


def build_models(
    settings: Settings, force: bool, progress: Progress = _quiet, rebuild: str | None = None
) -> BuildSummary:
    """``build`` of several models: analyse each beside ``settings.out``, then draw the
    site of all of them from those folders (``render`` of them gives the same bytes)."""
    from attnreport.publish_several import comparison_site

    def analyse(scratch: Settings, clock: StageClock) -> list[Path]:
        return analyze_models(scratch, force=True, progress=clock)

    return built(
        settings, force, progress, rebuild, model_inputs(settings), analyse, comparison_site
    )
