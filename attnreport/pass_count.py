"""Progress within the interventions: the model's forward passes counted as they end.

The grids (``attnreport.interventions``) run one forward pass per cell and per baseline;
a hook on the model (removed on the way out, whatever happens) reports each one, so the
grids themselves know nothing of progress. ``intervention_passes`` says how many passes
the grids at a layer make, so the report carries a total and the display an estimate.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from torch import nn

from attnreport.config import Settings
from attnreport.models.attending import spec_at
from attnreport.session import Session
from attnreport.vocabulary import TARGETS

PassProgress = Callable[[int, int], None]  # (passes done, passes in all)


def intervention_passes(session: Session, settings: Settings, layer: int) -> int:
    """Forward passes of ``study.intervention_results`` at ``layer``: the scaling grid's
    baseline and one per (target, epsilon); per mean-grid sentence a baseline and one per
    target; and, when the layer rotates q and k, per sentence a baseline and one for Q and K
    averaged before the rotation."""
    from attnreport.checks import mean_sentence_indices

    n_mean = len(mean_sentence_indices(settings, len(session.sentences)))
    scaling = 1 + len(TARGETS) * len(settings.epsilons)
    before_rotation = n_mean * 3 if spec_at(session.specs, layer).rotate is not None else 0
    return scaling + n_mean * (1 + len(TARGETS)) + before_rotation


@contextmanager
def counting_passes(model: nn.Module, total: int, report: PassProgress | None) -> Iterator[None]:
    """Within the block, ``report(done, total)`` after each forward pass of ``model``
    (``done`` capped at ``total``); no hook at all when ``report`` is None."""
    if report is None:
        yield
        return
    done = 0

    def hook(_module: nn.Module, _args: object, _output: object) -> None:
        nonlocal done
        done += 1
        report(min(done, total), total)

    handle = model.register_forward_hook(hook)
    try:
        yield
    finally:
        handle.remove()
