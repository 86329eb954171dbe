"""Where this attnreport was installed from, as a pip requirement a CI runner can install.

``attnreport init`` writes it into the project's workflow, so GitHub builds the report with
the attnreport its author ran, not whatever a fixed URL holds that day. pip records the
origin of every install (PEP 610, ``direct_url.json`` in the ``.dist-info``):

- from a git URL: that URL at the commit installed (``git+https://…@<sha>``);
- from a wheel or sdist URL: that URL;
- from a package index (no ``direct_url.json``): the same version by name
  (``attnreport==0.2.0``);
- from a local folder or file, or a source checkout (editable, or on ``sys.path``):
  nothing a runner can reach, so None, and the author names one (``init --source``, or the
  workflow's ``ATTNREPORT`` line).
"""

from __future__ import annotations

import importlib.metadata
import json
import re
from pathlib import Path

from attnreport.errors import AttnReportError

VERSION = re.compile(r"\d+(\.\d+)*([a-z]+\d*)?(\.post\d+)?(\.dev\d+)?")
REMOTE = ("https://", "http://", "ssh://", "git@")


def source_from(direct_url: str | None, version: str) -> str | None:
    """The source of one install from its ``direct_url.json`` text (None: from an index)
    and its version: a version, a remote URL, or None for a local one."""
    if direct_url is None:
        return version
    info = json.loads(direct_url)
    url = str(info.get("url", ""))
    if not url.startswith(REMOTE):
        return None  # file://: a folder or file on the author's machine
    vcs = info.get("vcs_info")
    if vcs:
        commit = vcs.get("commit_id") or vcs.get("requested_revision")
        return f"{vcs.get('vcs', 'git')}+{url}" + (f"@{commit}" if commit else "")
    return url


def installed_source(package_dir: Path | None = None) -> str | None:
    """``source_from`` for the attnreport running now (``package_dir``: its package
    folder); None when it runs from a source checkout rather than an installed wheel."""
    if package_dir is None:
        import attnreport

        package_dir = Path(attnreport.__file__).resolve().parent
    home = package_dir.parent
    if home.name not in ("site-packages", "dist-packages"):
        return None  # editable, or a checkout on sys.path: a runner cannot install it
    found = list(importlib.metadata.distributions(name="attnreport", path=[str(home)]))
    if not found:
        return None
    return source_from(found[0].read_text("direct_url.json"), found[0].version)


def check_source(source: str) -> str:
    """``source`` as given to ``init --source``: a version (``0.2.0``) or a URL pip
    installs (``git+https://…@TAG``, a wheel's URL). AttnReportError for anything that
    cannot stand inside the workflow's quoted ``ATTNREPORT`` line."""
    if not source or re.search(r'[\s"\\$`]', source):
        raise AttnReportError(
            f"--source {source!r} is not a version or URL (no spaces, quotes, '\\', '$' or '`')"
        )
    return source


def requirement(extra: str, source: str | None) -> str:
    """The pip requirement of attnreport with ``extra`` from ``source`` ("" for None)."""
    if source is None:
        return ""
    if VERSION.fullmatch(source):
        return f"attnreport[{extra}]=={source}"
    return f"attnreport[{extra}] @ {source}"
