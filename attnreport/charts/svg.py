"""Byte-reproducible SVG: Vega's process-wide id counter taken out of exported files."""

from __future__ import annotations

import re

_SVG_ID = re.compile(rb'id="((?:gradient_|clip|pattern_)\d+)"')


def stable_svg_ids(svg: bytes) -> bytes:
    """Renumber Vega's generated SVG ids (``gradient_17``) 1, 2, ... in order of appearance.

    Vega numbers them from a counter that lives as long as the process, so the same figure
    exported twice (or in two worker processes) differs; renumbering per file makes the
    images byte-reproducible. Idempotent: renumbered output renumbers to itself.
    """
    ids: dict[bytes, bytes] = {}
    for m in _SVG_ID.finditer(svg):
        old = m.group(1)
        ids.setdefault(old, re.sub(rb"\d+$", str(len(ids) + 1).encode(), old))
    if not ids:
        return svg
    names = b"|".join(re.escape(k) for k in sorted(ids, key=len, reverse=True))
    pattern = re.compile(rb'(?<=["#])(' + names + rb')(?=[")])')
    return pattern.sub(lambda m: ids[m.group(1)], svg)
