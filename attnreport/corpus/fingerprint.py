"""The run fingerprint: what must match for a resumed run to continue an earlier one.

Stored as ``run.json`` in the results folder when a run starts. A rerun with
``--resume`` compares its own fingerprint with the stored one and refuses to mix
results (one line naming the first difference) when the model weights, dtype, device,
any setting, or the sentences (texts and token ids) differ.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, TypedDict

from attnreport.config import Settings
from attnreport.jsontypes import Json
from attnreport.results import SCHEMA
from attnreport.session import Session

RUN_SCHEMA = "attnreport.run/1"


def sentences_digest(session: Session) -> str:
    """sha256 over every sentence's text and token ids, in order."""
    digest = hashlib.sha256()
    for s in session.sentences:
        digest.update(json.dumps([s.text, list(s.token_ids)], ensure_ascii=False).encode())
        digest.update(b"\n")
    return "sha256:" + digest.hexdigest()


def settings_json(settings: Settings) -> Json:
    """Every setting that changes the numbers (``Settings.recorded``), as JSON values."""
    return json.loads(json.dumps(settings.recorded()))


class ModelId(TypedDict):
    name: str
    fingerprint: str


class SentencesId(TypedDict):
    count: int
    digest: str


class RunFingerprint(TypedDict):
    """``run.json``: what a resumed run must share with the run it continues."""

    schema: str
    results_schema: str
    model: ModelId
    dtype: str
    device: str
    settings: Json
    sentences: SentencesId


def run_fingerprint(session: Session, settings: Settings) -> RunFingerprint:
    """``run.json``: model fingerprint and name, dtype, device, settings, sentences digest."""
    loaded = session.loaded
    return {
        "schema": RUN_SCHEMA,
        "results_schema": SCHEMA,
        "model": {"name": loaded.source.display_name, "fingerprint": loaded.fingerprint},
        "dtype": loaded.dtype,
        "device": loaded.device,
        "settings": settings_json(settings),
        "sentences": {"count": len(session.sentences), "digest": sentences_digest(session)},
    }


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 40 else text[:39] + "…"


def difference(stored: Json, current: RunFingerprint) -> str | None:
    """The first difference between two fingerprints, as a phrase; None when they match."""
    if (
        stored.get("schema") != current["schema"]
        or stored.get("results_schema") != current["results_schema"]
    ):
        return f"it was written by another results format ({stored.get('results_schema')})"
    old_model, new_model = stored.get("model", {}), current["model"]
    if old_model.get("fingerprint") != new_model["fingerprint"]:
        return (
            f"it used the model {old_model.get('name')} ({str(old_model.get('fingerprint'))[:19]}), "
            f"this run {new_model['name']} ({new_model['fingerprint'][:19]})"
        )
    for key in ("dtype", "device"):
        if stored.get(key) != current[key]:
            return f"it used {key} {stored.get(key)}, this run {current[key]}"
    old_settings = stored.get("settings", {})
    for key, value in current["settings"].items():
        if old_settings.get(key) != value:
            return (
                f"its setting {key} is {_short(old_settings.get(key))}, this run's {_short(value)}"
            )
    old, new = stored.get("sentences", {}), current["sentences"]
    if old != new:
        return (
            f"it has other sentences ({old.get('count')} sentences, {str(old.get('digest'))[:19]}; "
            f"this run {new['count']}, {new['digest'][:19]})"
        )
    return None
