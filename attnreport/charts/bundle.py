"""vl-convert's JavaScript bundle (Vega, Vega-Lite, vega-embed), kept in the user cache.

``vl_convert.javascript_bundle()`` costs about 1.7 s per build and only changes with
vl-convert's version, so it is stored in the image cache's entry format (the bundle as
the first blob, the second empty) under ``cache_dir()/vega``, keyed by that version.
"""

from __future__ import annotations

import hashlib

from attnreport.charts.image_cache import ImageCache
from attnreport.charts.images import exporter_version


def javascript_bundle() -> str:
    """The bundle's text, from the cache when this vl-convert version wrote it before."""
    import vl_convert

    from attnreport.usercache import cache_dir

    cache = ImageCache(cache_dir() / "vega")
    key = hashlib.sha256(f"javascript bundle; {exporter_version()}".encode()).hexdigest()
    entry = cache.get(key)
    if entry is not None:
        return entry[0].decode("utf-8")
    text = vl_convert.javascript_bundle()
    cache.put(key, text.encode("utf-8"), b"")
    return text
