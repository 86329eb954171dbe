"""The user cache folder, shared by every cache of attnreport (models, static images).

Kept apart from the model loader so that code which never touches a model (rendering a
site from results) can find the cache without importing torch.
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """``$ATTNREPORT_CACHE``, else ``$XDG_CACHE_HOME/attnreport``, else ``~/.cache/attnreport``."""
    if os.environ.get("ATTNREPORT_CACHE"):
        return Path(os.environ["ATTNREPORT_CACHE"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base).expanduser() / "attnreport"
