"""vl-convert's JavaScript bundle (Vega, Vega-Lite, vega-embed), kept in the user cache.

``vl_convert.javascript_bundle()`` costs about 1.2-1.7 s and only changes with
vl-convert's version, so it is stored in the image cache's entry format (the bundle as
the first blob, the second empty) under ``cache_dir()/vega``, keyed by that version.

When it is not cached it is made in a child process: vl-convert holds the GIL for the
whole call, so from a thread it would stop the site build meanwhile (a cold render waited
on it), while a process runs beside the build on another core.
"""

from __future__ import annotations

import concurrent.futures as cf
import hashlib
import multiprocessing
from collections.abc import Callable

from attnreport.charts.export.image_cache import ImageCache
from attnreport.charts.export.images import exporter_version


def javascript_bundle() -> str:
    """The bundle's text, from the cache when this vl-convert version wrote it before."""
    import vl_convert

    from attnreport.usercache import cache_dir

    cache = ImageCache(cache_dir() / "vega")
    key = hashlib.sha256(f"javascript bundle; {exporter_version()}".encode()).hexdigest()
    entry = cache.get(key)
    if entry is not None:
        return entry[0].decode("utf-8")
    text = _made_beside(vl_convert.javascript_bundle)
    cache.put(key, text.encode("utf-8"), b"")
    return text


def _made_beside(make: Callable[[], str]) -> str:
    """``make()`` run in a new process (``spawn``: vl-convert runs threads that ``fork``
    would copy half-alive), or here when that fails in any way (no process could be
    started, ``make`` cannot be pickled, or it failed there: then it fails here too)."""
    try:
        context = multiprocessing.get_context("spawn")
        with cf.ProcessPoolExecutor(1, mp_context=context) as pool:
            return pool.submit(make).result()
    except Exception:
        return make()
