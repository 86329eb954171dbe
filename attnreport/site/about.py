"""The "About this report" rows: settings, the command that rebuilds it, version, checksum.

The checksum identifies the results the report was drawn from: the SHA-256 of the
``sha256sum`` listing of the results files (canonical JSON, ``docs/results-schema.md``)
in path order, so a reader can check a results folder with one shell line::

    cd RESULTS && find . -name '*.json' -printf '%P\\n' | LC_ALL=C sort | xargs sha256sum | sha256sum
"""

from __future__ import annotations

import hashlib
import json
import shlex
from collections.abc import Mapping
from typing import Any

CHECK_COMMAND = (
    "find . -name '*.json' -printf '%P\\n' | LC_ALL=C sort | xargs sha256sum | sha256sum"
)


def canonical_json(value: Any) -> bytes:
    """The results files' JSON: sorted keys, no NaN, UTF-8, compact, one trailing newline."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, allow_nan=False,
                      separators=(",", ":"))  # fmt: skip
    return (text + "\n").encode("utf-8")


def results_files(results: Any) -> dict[str, bytes]:
    """``{relative path: bytes}`` of the results folder: ``results.files()`` when the bundle
    has it, else made from its parts (manifest, set, sentences, interventions).
    """
    if callable(getattr(results, "files", None)):
        return dict(results.files())

    def get(name: str) -> Any:
        return results.get(name) if isinstance(results, Mapping) else getattr(results, name, None)

    out = {"manifest.json": canonical_json(get("manifest")), "set.json": canonical_json(get("set"))}
    out["interventions.json"] = canonical_json(get("interventions"))
    for i, sentence in enumerate(get("sentences") or []):
        index = int((sentence.get("sentence") or {}).get("index", i))
        out[f"sentences/{index:03d}.json"] = canonical_json(sentence)
    return out


def results_checksum(files: Mapping[str, bytes]) -> str:
    """``sha256:HEX`` of the ``sha256sum`` listing of the ``.json`` files, in path order."""
    listing = "".join(
        f"{hashlib.sha256(files[path]).hexdigest()}  {path}\n"
        for path in sorted(p for p in files if p.endswith(".json"))
    )
    return "sha256:" + hashlib.sha256(listing.encode("utf-8")).hexdigest()


def settings_text(settings: Mapping[str, Any]) -> str:
    """``breakdown_ranks 3 · epsilons 0.5, 0.001, 1e-10 · map_tokens 256`` (unset ones left out)."""
    parts = []
    for name, value in sorted(settings.items()):
        if value is None or value == []:
            continue
        if isinstance(value, list | tuple):
            value = ", ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in value)
        elif isinstance(value, float):
            value = f"{value:g}"
        parts.append(f"{name} {value}")
    return " · ".join(parts)


def rebuild_command(manifest: Mapping[str, Any]) -> str:
    """The ``attnreport build`` command line for this model and these settings.

    The manifest's own ``command`` wins when it records one; otherwise the model argument
    is its hub id or path, or ``default`` for the embedded model.
    """
    if manifest.get("command"):
        return str(manifest["command"])
    model = manifest.get("model") or {}
    name = str(model.get("name", ""))
    arg = model.get("id") or model.get("path") or ("default" if "embedded" in name else name)
    words = ["attnreport", "build", "--model", str(arg or "default")]
    layer = (manifest.get("settings") or {}).get("intervene_layer")
    if layer is not None:
        words += ["--intervene-layer", str(layer)]
    return shlex.join(words)


def about_rows(
    results: Any, manifest: Mapping[str, Any], version: str
) -> tuple[tuple[str, str], ...]:
    """(label, value) rows of the About section; rows the data lacks are left out."""
    rows = [("Rebuild with", rebuild_command(manifest))]
    settings = settings_text(manifest.get("settings") or {})
    if settings:
        rows.append(("Settings", settings))
    rows.append(("attnreport", version))
    rows.append(("Results checksum", results_checksum(results_files(results))))
    return tuple(rows)
