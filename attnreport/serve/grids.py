"""The intervention grids of a results folder that a save finished without them.

The grids are most of a save's forward passes (24 for two short sentences, minutes on a
busy CPU) while one edited sentence takes one, so ``serve --watch`` puts the site up
first without them (``analysis.update_results`` with ``defer_grids``) and runs them here
after: at the layer the set file chooses (``corpus.run.intervention_layer``, as a run
that ran them at once would), counted pass by pass. ``on_pass`` hears of every pass
and may raise to stop them (a newer save, ``loop``); nothing is then written, and the
folder stays the complete one without grids, which the next build takes up again.
"""

from __future__ import annotations

from pathlib import Path

from attnreport.config import Settings
from attnreport.corpus.run import intervention_layer, interventions_file
from attnreport.corpus.store import RunStore
from attnreport.pass_count import PassProgress, counting_passes, intervention_passes
from attnreport.results.layout import CURRENT, MANIFEST, read_json
from attnreport.results.types import set_from_json
from attnreport.serve.analysis import grids_listed
from attnreport.session import Session
from attnreport.study import intervention_results


def grids_missing(folder: Path) -> bool:
    """Whether ``folder`` is complete but for its intervention grids."""
    return (folder / MANIFEST).is_file() and not grids_listed(folder)


def grids_layer(settings: Settings, session: Session, folder: Path) -> int:
    """The layer the grids of ``folder`` run in, chosen from its set file."""
    path = folder / CURRENT.set
    pooled = set_from_json(read_json(path), str(path)).focus_pooled.arrays()
    return intervention_layer(settings, session, pooled)


def finish_grids(
    settings: Settings, session: Session, folder: Path, on_pass: PassProgress | None = None
) -> int:
    """Run the grids ``folder`` lacks on ``session`` (the sentences its manifest lists)
    and add their file; the forward passes they took (0: none were missing)."""
    if not grids_missing(folder):
        return 0
    layer = grids_layer(settings, session, folder)
    passes = intervention_passes(session, settings, layer)
    with counting_passes(session.model, passes, on_pass):
        interventions = intervention_results(session, settings, layer)
    RunStore(folder).add_files({CURRENT.interventions: interventions_file(interventions)})
    return passes
