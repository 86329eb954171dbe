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

PassProgress = Callable[[int, int], None]  # (passes done, passes in all)


def intervention_pass_plan(session: Session, settings: Settings, layer: int) -> dict[str, int]:
    """The forward passes of ``study.intervention_results`` at ``layer``, by what they do:
    one unmodified pass per input (the scaling and mean grids share it); per scaled input
    one per (target, epsilon), Q or K being one target; per mean input one per target;
    and, when the layer rotates q and k, per mean input one for Q and one for K averaged
    before the rotation. Every pass after an input's first replays the blocks before
    ``layer`` (``interventions.replayed_blocks``)."""
    from attnreport.checks import mean_sentence_indices, scaling_sentence_indices
    from attnreport.interventions import kind

    count = len(session.sentences)
    scaled = scaling_sentence_indices(settings, count)
    meaned = mean_sentence_indices(settings, count)
    spec = spec_at(session.specs, layer)
    rotated = kind("mean_before_rotation")
    return {
        "unmodified": len({*scaled, *meaned}),
        "scaling": len(scaled) * len(kind("scale").targets) * len(settings.epsilons),
        "mean": len(meaned) * len(kind("mean").targets),
        "mean before rotation": len(meaned) * len(rotated.targets) if rotated.applies(spec) else 0,
    }


def intervention_passes(session: Session, settings: Settings, layer: int) -> int:
    """Forward passes of ``study.intervention_results`` at ``layer``, in all
    (``intervention_pass_plan``)."""
    return sum(intervention_pass_plan(session, settings, layer).values())


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
