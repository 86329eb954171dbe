"""Bring a results folder up to date with a save, analysing only what changed.

The folder is an ``attnreport analyze`` folder (``corpus.store``: every file atomic,
resumable). What a save asks for is found from the folder itself, so a restarted
``serve --watch`` carries on where the last one stopped:

- ``run.json`` equals this run's fingerprint and the manifest is there: nothing to do;
- it equals it but the manifest is missing (a run was stopped): resume it;
- it differs only in the sentences and the run was complete: the sentences whose text
  or token ids changed at their index (and those past the new end) are forgotten and
  analysed again (``RunStore.forget_sentences``, then a resumed ``run_corpus``); the
  intervention grids are read back when their layer and their sentences' token ids are
  unchanged, since they are a function of these alone (same model and settings);
- anything else (model, dtype, device, a recorded setting): a fresh run of every sentence.

A sentence inserted near the top moves every later one to a new index, so every later
one is analysed again.

With ``defer_grids``, grids that cannot be read back are not run: the folder is finished
without them (and their old file removed), so that its site goes up at once;
``serve.grids`` runs them after.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from attnreport.checks import mean_sentence_indices, scaling_sentence_indices
from attnreport.config import Settings
from attnreport.corpus.fingerprint import RunFingerprint, difference, run_fingerprint
from attnreport.corpus.run import CorpusOptions, InterventionsAt, Progress, run_corpus
from attnreport.corpus.store import RunStore
from attnreport.errors import AttnReportError
from attnreport.jsontypes import Json
from attnreport.results import Interventions
from attnreport.results.interventions import interventions_from_json
from attnreport.results.layout import CURRENT, MANIFEST, read_json
from attnreport.session import Session
from attnreport.study import intervention_results

Listed = dict[int, tuple[str, tuple[int, ...]]]  # index -> (text, token ids)


@dataclass(frozen=True)
class Plan:
    """What a save needs: ``kind`` is ``none`` (up to date), ``resume`` (a stopped run),
    ``sentences`` (only ``changed`` are analysed) or ``all`` (a fresh run); ``before``:
    the folder's sentences before the save (``sentences`` only)."""

    kind: str
    changed: tuple[int, ...] = ()
    before: Listed | None = None


def listed_sentences(folder: Path) -> Listed:
    """The sentences a complete folder's manifest lists, with their token ids."""
    raw = read_json(folder / MANIFEST)
    return {int(s["index"]): (s["text"], tuple(s["token_ids"])) for s in raw["sentences"]}


def _without_sentences(fingerprint: Json | RunFingerprint) -> Json:
    return {k: v for k, v in fingerprint.items() if k != "sentences"}


def plan_analysis(folder: Path, session: Session, fingerprint: RunFingerprint) -> Plan:
    """What ``folder`` needs to hold the results of ``session`` (see the module docstring)."""
    try:
        stored = RunStore(folder).stored_fingerprint() if folder.is_dir() else None
    except AttnReportError:
        stored = None  # unreadable: start again
    if stored is None:
        return Plan("all")
    complete = (folder / MANIFEST).is_file()
    if difference(stored, fingerprint) is None:
        return Plan("none" if complete else "resume")
    if not complete or _without_sentences(stored) != _without_sentences(fingerprint):
        return Plan("all")
    try:
        before = listed_sentences(folder)
    except (OSError, ValueError, KeyError, TypeError):
        return Plan("all")
    now = {s.index: (s.text, s.token_ids) for s in session.sentences}
    changed = {i for i in now if before.get(i) != now[i]} | {i for i in before if i not in now}
    return Plan("sentences", tuple(sorted(changed)), before)


def previous_grids(folder: Path, before: Listed) -> InterventionsAt:
    """The folder's grids when its manifest lists them and they ran at the same layer on
    the same token ids (same model and settings: the plan checked), else None."""
    path = folder / CURRENT.interventions
    listed = grids_listed(folder)

    def at(session: Session, settings: Settings, layer: int) -> Interventions | None:
        count = len(session.sentences)
        inputs = {
            *scaling_sentence_indices(settings, count),
            *mean_sentence_indices(settings, count),
        }
        same = all(before.get(i, ("", ()))[1] == session.sentences[i].token_ids for i in inputs)
        if not (same and listed):
            return None
        try:
            previous = interventions_from_json(read_json(path), str(path))
        except (OSError, ValueError, AttnReportError):
            return None
        return previous if previous.layer == layer else None

    return at


def grids_listed(folder: Path) -> bool:
    """Whether the folder's manifest lists its intervention grids (False: no manifest, or
    a folder finished without them, ``defer_grids``)."""
    try:
        return CURRENT.interventions in read_json(folder / MANIFEST)["files"]
    except (OSError, ValueError, KeyError, TypeError):
        return False


def grids_at(folder: Path, previous: InterventionsAt | None, defer: bool) -> InterventionsAt:
    """``previous`` grids when there are, else: with ``defer`` none (the old file is
    removed before the manifest that would leave it unlisted: it holds other inputs'
    grids), without it ``intervention_results``."""

    def at(session: Session, settings: Settings, layer: int) -> Interventions | None:
        found = previous(session, settings, layer) if previous is not None else None
        if found is not None:
            return found
        if defer:
            (folder / CURRENT.interventions).unlink(missing_ok=True)
            return None
        return intervention_results(session, settings, layer)

    return at


def update_results(
    settings: Settings,
    session: Session,
    folder: Path,
    progress: Progress,
    defer_grids: bool = False,
) -> Plan:
    """Bring ``folder`` up to date with ``settings`` and ``session`` (its sentences);
    return the plan it followed. With ``defer_grids`` the folder may be left without its
    intervention grids (``grids_listed``; see the module docstring). Raises
    ``AttnReportError`` as ``analyze`` does."""
    fingerprint = run_fingerprint(session, settings)
    plan = plan_analysis(folder, session, fingerprint)
    if plan.kind == "none":
        return plan
    previous = None
    if plan.kind == "sentences" and plan.before is not None:
        previous = previous_grids(folder, plan.before)  # read before the manifest goes
        RunStore(folder).forget_sentences(set(plan.changed), fingerprint)
    interventions = grids_at(folder, previous, defer_grids)
    options = CorpusOptions(resume=plan.kind != "all")
    run_corpus(replace(settings, out=str(folder)), options, False, progress, session, interventions)
    return plan
