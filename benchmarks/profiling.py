"""Profile one stage of a warm build with pyinstrument (optional: only when it is installed).

``profile_stage`` runs a call under pyinstrument and summarises the frame tree as
tables: the functions with the most self time and the heaviest call path.
"""

from __future__ import annotations

import importlib.util
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


def available() -> bool:
    return importlib.util.find_spec("pyinstrument") is not None


@dataclass(frozen=True)
class Hotspot:
    function: str
    where: str
    seconds: float


@dataclass(frozen=True)
class StageProfile:
    total_s: float
    by_self_time: list[Hotspot]  # functions with the most self time, summed over the tree
    heaviest_path: list[Hotspot]  # from the root, always into the most expensive child
    text: str  # pyinstrument's own text rendering, trimmed


def _where(frame: Any) -> str:
    path = frame.file_path_short or frame.file_path or "?"
    return f"{path}:{frame.line_no}"


def _self_times(root: Any) -> dict[tuple[str, str], float]:
    """Self time per (function, where); pyinstrument's synthetic ``[self]`` leaves count
    for the function they sit under."""
    totals: dict[tuple[str, str], float] = defaultdict(float)
    stack = [root]
    while stack:
        frame = stack.pop()
        real = [child for child in frame.children if not child.is_synthetic]
        own = frame.time - sum(child.time for child in real)
        totals[(frame.function or "?", _where(frame))] += max(own, 0.0)
        stack.extend(real)
    return totals


def _heaviest_path(root: Any, floor: float, limit: int = 14) -> list[Hotspot]:
    path, frame = [], root
    while frame is not None and frame.time >= floor and len(path) < limit:
        path.append(Hotspot(frame.function or "?", _where(frame), frame.time))
        real = [child for child in frame.children if not child.is_synthetic]
        frame = max(real, key=lambda child: child.time, default=None)
    return path


def profile_stage(fn: Callable[[], Any], top: int = 12) -> StageProfile:
    """Run ``fn`` under pyinstrument (1 ms sampling) and summarise where the time went."""
    from pyinstrument import Profiler

    profiler = Profiler(interval=0.001)
    profiler.start()
    try:
        fn()
    finally:
        profiler.stop()
    from pyinstrument import processors

    root = processors.aggregate_repeated_calls(profiler.last_session.root_frame(), {})
    totals = _self_times(root)
    ranked = sorted(totals.items(), key=lambda item: -item[1])[:top]
    hot = [Hotspot(name, where, seconds) for (name, where), seconds in ranked]
    text = profiler.output_text(unicode=False, color=False, show_all=False)
    trimmed = "\n".join(text.splitlines()[:60])
    return StageProfile(root.time, hot, _heaviest_path(root, 0.02 * root.time), trimmed)


def stage_calls(stages: list[str], settings: Any) -> dict[str, Callable[[], Any]]:
    """Calls that redo ``build_site`` stages on the warm cache (the study runs once, now)."""
    from attnreport.build import study
    from attnreport.session import open_session
    from attnreport.site.assemble import assemble_site
    from attnreport.site.context import SiteOptions
    from attnreport.study import analyze_sentence, intervention_results

    session, results = study(settings)
    options = SiteOptions(
        title=settings.title, date=settings.date, authors=settings.authors, images=settings.images
    )
    calls = {
        "load": lambda: open_session(
            settings.model, settings.sentences, settings.dtype, settings.device
        ),
        "capture": lambda: [analyze_sentence(session, s, settings) for s in session.sentences],
        "interventions": lambda: intervention_results(
            session, settings, results.interventions.layer
        ),
        "charts and pages": lambda: assemble_site(results, options),
    }
    return {stage: calls[stage] for stage in stages if stage in calls}


def _stage_tables(section: Any, stage: str, seconds: float, profile: StageProfile) -> None:
    total = profile.total_s or 1.0
    section.add(
        f"### {stage} ({seconds:.1f} s in the warm build)",
        "",
        f"Run again in this process under pyinstrument (1 ms sampling, {profile.total_s:.1f} s "
        "profiled). Functions with the most self time, summed over every call path:",
        "",
    )
    rows = [
        (f"`{h.function}`", f"`{h.where}`", f"{h.seconds:.2f} s", f"{h.seconds / total:.0%}")
        for h in profile.by_self_time
    ]
    section.table(("Function", "Where", "Self time", "Share"), rows)
    section.add("Heaviest call path (each step the most expensive child of the one above):", "")
    rows = [
        (f"`{h.function}`", f"`{h.where}`", f"{h.seconds:.2f} s", f"{h.seconds / total:.0%}")
        for h in profile.heaviest_path
    ]
    section.table(("Function", "Where", "Total time", "Share"), rows)
    section.add("pyinstrument's summary (first 60 lines):", "", "```text", profile.text, "```", "")


def profile_section(stages: dict[str, float], settings: Any, enabled: bool, top: int = 2) -> Any:
    """The Profile section: pyinstrument on the ``top`` slowest stages of the warm build."""
    from benchmarks.report import Section

    section = Section("Profile")
    if not stages or not enabled or not available():
        reason = "not run (quick mode or --no-profile)" if available() else "no pyinstrument"
        section.add(f"Profile skipped: {reason}; {len(stages)} stages were timed.", "")
        return section
    ranked = sorted(stages, key=lambda stage: -stages[stage])[:top]
    section.add(
        f"The slowest stages of the warm build in section 4: {', '.join(ranked)}. The study "
        "(load, capture, interventions) runs once unprofiled, then each stage is redone "
        "under the profiler.",
        "",
    )
    for stage, call in stage_calls(ranked, settings).items():
        _stage_tables(section, stage, stages[stage], profile_stage(call))
    return section
