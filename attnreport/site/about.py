"""The "About this report" rows: settings, the command that rebuilds it, version, checksum.

The checksum identifies the results the report was drawn from: the SHA-256 of the
``sha256sum`` listing of the results files (``results.dump``: the site's ``results/``)
in path order, so a reader can check a results folder with one shell line (schema 10:
the manifest, the gzip-compressed parts and the map parts; ``run.json`` and
``partials/`` left out)::

    cd RESULTS && find . \\( -name manifest.json -o -name '*.json.gz' -o -path './sentences/*/*.js' \\) -printf '%P\\n' | LC_ALL=C sort | xargs sha256sum | sha256sum

Schema 4 to 9 (no map parts) leave out ``-o -path ...``.
A folder of schema 1 to 3 (plain ``.json``) keeps the line it was shown with,
``find . -name '*.json' ...``, so its site renders as it did.
"""

from __future__ import annotations

import hashlib
import shlex
from collections.abc import Mapping
from typing import Any

from attnreport.results import Manifest
from attnreport.results.layout import CURRENT, PARTS_SINCE, Layout
from attnreport.results.manifest import manifest_to_json
from attnreport.vocabulary import PYTHON_SOURCE

LISTING = "-printf '%P\\n' | LC_ALL=C sort | xargs sha256sum | sha256sum"


def check_command(layout: Layout = CURRENT) -> str:
    """The shell line that recomputes ``results_checksum`` inside a folder of ``layout``:
    it finds the files ``layout.holds``."""
    parts = " -o -path './sentences/*/*.js'" if layout.version >= PARTS_SINCE else ""
    if layout.compressed:
        return f"find . \\( -name manifest.json -o -name '*{layout.suffix}'{parts} \\) {LISTING}"
    return f"find . -name '*{layout.suffix}' {LISTING}"


def results_checksum(files: Mapping[str, bytes], layout: Layout = CURRENT) -> str:
    """``sha256:HEX`` of the ``sha256sum`` listing of the results files of ``layout``
    (the manifest and the parts; other files ignored), in path order."""
    listing = "".join(
        f"{hashlib.sha256(files[path]).hexdigest()}  {path}\n"
        for path in sorted(p for p in files if layout.holds(p))
    )
    return "sha256:" + hashlib.sha256(listing.encode("utf-8")).hexdigest()


LABELS = {
    "bos": "Begin-of-sequence token",
    "bos_added": "Every sentence starts with it",
    "chat_template": "Each sentence read as a chat message",
    "breakdown_ranks": "Ranks in the score breakdown",
    "epsilons": "Intervention scale factors (ε)",
    "intervene_layer": "Layer of the interventions",
    "intervene_depth": "Relative depth of the interventions",
    "scaling_sentence": "Sentence of the scaling sweep's maps",
    "scaling_sentences": "Sentences of the scaling sweep",
    "mean_sentences": "Sentences of the mean ablation",
    "map_tokens": "Attention maps kept up to (tokens)",
    "view_head": "Layer and head the pages open on",
    "pages": "Sentences with a page and their maps kept",
}
"""A human label per recorded setting (``config.Settings``); a key not here shows as is."""

SHOWN_DIGITS = {"intervene_depth": 2}
"""Significant digits a setting is shown with, where its recorded value has more than a
reader can use: a comparison records the matched depth as ``layer / (L - 1)`` (0.827586)."""


def _value_text(value: Any, digits: int | None = None) -> str:
    if digits is not None and isinstance(value, float):
        return f"{value:.{digits}g}"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list | tuple):
        return ", ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in value)
    return f"{value:g}" if isinstance(value, float) else str(value)


def settings_rows(settings: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """(human label, value) per recorded setting, in ``LABELS`` order then by key; unset
    ones (None, empty) left out."""
    order = {key: i for i, key in enumerate(LABELS)}
    keys = sorted(settings, key=lambda k: (order.get(k, len(order)), k))
    return tuple(
        (LABELS.get(key, key), _value_text(settings[key], SHOWN_DIGITS.get(key)))
        for key in keys
        if settings[key] is not None and settings[key] != []
    )


def settings_text(settings: Mapping[str, Any]) -> str:
    """``breakdown_ranks 3 · epsilons 0.5, 0.001, 1e-10 · map_tokens 256`` (unset ones left out)."""
    return " · ".join(
        f"{name} {_value_text(value)}"
        for name, value in sorted(settings.items())
        if value is not None and value != []
    )


def rebuild_command(manifest: Manifest, pages: str = "all") -> str:
    """The ``attnreport build`` command line for this model, these settings and pages, for
    results that do not record the command that made them (``analyze`` output).

    The model argument is ``default`` for the embedded model, else its hub id or the name of
    its file or folder (a local path is the reader's own to fill in).
    """
    model = manifest.model
    if model.source == PYTHON_SOURCE:
        return held_rebuild(manifest, pages)
    embedded = model.source == "gguf" and "embedded" in model.name
    words = ["attnreport", "build", "--model", "default" if embedded else model.name]
    if model.dtype != "float32":
        words += ["--dtype", model.dtype]
    if manifest.settings.bos != "auto":
        words += ["--bos", manifest.settings.bos]
    if manifest.settings.intervene_layer is not None:
        words += ["--intervene-layer", str(manifest.settings.intervene_layer)]
    if pages != "all":
        words += ["--pages", pages]
    return shlex.join(words)


def held_rebuild(manifest: Manifest, pages: str = "all") -> str:
    """For a model object analysed in Python: the calls that made the report, with the
    settings that differ from their defaults (the object itself was never saved)."""
    recorded = manifest_to_json(manifest)["settings"]
    chosen = {k: recorded.get(k) for k in ("bos", "intervene_layer")}
    given = "".join(f", {k}={v!r}" for k, v in chosen.items() if v not in (None, "auto"))
    shown = "" if pages == "all" else f", pages={pages!r}"
    return (
        f"attnreport.analyze(model, tokenizer, sentences{given}) in Python, on the model "
        f"object the card describes, then attnreport.render(study, out{shown})"
    )


def about_rows(
    manifest: Manifest,
    version: str,
    checksum: str,
    pages: str = "all",
    rebuild: str | None = None,
) -> tuple[tuple[str, str], ...]:
    """(label, value) rows of the About section: the command that rebuilds the report
    (``rebuild``, the one ``build`` was run with, else one derived from the results), a row
    per recorded setting with its human label, the pages row unless every sentence has a
    page, the version and ``checksum`` (``results_checksum``)."""
    rows = [("Rebuild with", rebuild or rebuild_command(manifest, pages))]
    rows += settings_rows(manifest_to_json(manifest)["settings"])
    if pages != "all":
        rows.append(("Pages", f"--pages {pages} (the sentences with a page of their own)"))
    rows.append(("attnreport", version))
    rows.append(("Results checksum", checksum))
    return tuple(rows)
