"""Where this attnreport was installed from, as a pip requirement a CI runner can install,
checked when ``attnreport init`` writes it into the project's workflow.

The workflow must build the report with the attnreport its author ran, from a source a
GitHub runner reaches. pip records the origin of every install (PEP 610,
``direct_url.json`` in the ``.dist-info``); ``installed_origin`` reads it:

- from a package index (no ``direct_url.json``): the same version by name
  (``attnreport==0.2.0``), once PyPI is asked and has it;
- from a git URL: that URL at the commit installed (``git+https://…@<sha>``);
- from a wheel or sdist URL: that URL;
- from a folder (``pip install -e CLONE``, ``pip install CLONE``) or a checkout on
  ``sys.path``: the clone's ``origin`` remote at its commit, when that commit is on the
  remote (a remote-tracking branch holds it) and the remote is a URL a runner reaches
  (an SSH remote is read as its HTTPS address);
- anything else (a wheel file on this machine, a clone without a remote, an unpushed
  commit): nothing, and ``Origin.said`` says why in the words of one line.
"""

from __future__ import annotations

import importlib.metadata
import json
import re
import shutil
import subprocess
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

from attnreport.errors import AttnReportError

VERSION = re.compile(r"\d+(\.\d+)*([a-z]+\d*)?(\.post\d+)?(\.dev\d+)?")
REMOTE = ("https://", "http://", "ssh://", "git@")
PYPI = "https://pypi.org/pypi/attnreport/{version}/json"
SCP_LIKE = re.compile(r"(?:[\w.-]+@)?([\w.-]+):(?!//)(.+)")  # git@github.com:OWNER/REPO.git

Released = Callable[[str], bool | None]  # version -> on PyPI (None: PyPI cannot be asked)


@dataclass(frozen=True)
class Origin:
    """``source``: a version or a URL pip installs on a runner (None: no such source);
    ``said``: where it comes from, or why a runner cannot install this attnreport."""

    source: str | None
    said: str


def released(version: str, timeout: float = 5.0) -> bool | None:
    """Whether PyPI has attnreport ``version``; None when PyPI cannot be reached."""
    try:
        with urllib.request.urlopen(PYPI.format(version=version), timeout=timeout) as answer:
            return answer.status == 200
    except urllib.error.HTTPError as err:
        return False if err.code == 404 else None
    except (urllib.error.URLError, OSError, ValueError):
        return None


def from_index(version: str, on_pypi: Released = released) -> Origin:
    """An install from a package index: the same version from PyPI, if PyPI has it."""
    found = on_pypi(version)
    if found:
        return Origin(version, f"attnreport {version} from PyPI")
    why = (
        "PyPI has no attnreport " + version
        if found is False
        else "PyPI cannot be reached to check it"
    )
    return Origin(None, f"this attnreport {version} came from a package index, but {why}")


def origin_of(direct_url: str | None, version: str, on_pypi: Released = released) -> Origin:
    """The origin of one install from its ``direct_url.json`` text (None: from an index)."""
    if direct_url is None:
        return from_index(version, on_pypi)
    info = json.loads(direct_url)
    url = str(info.get("url", ""))
    if url.startswith(REMOTE):
        vcs = info.get("vcs_info")
        if vcs:
            commit = vcs.get("commit_id") or vcs.get("requested_revision")
            url = f"{vcs.get('vcs', 'git')}+{url}" + (f"@{commit}" if commit else "")
        return Origin(url, url)
    path = Path(unquote(urlparse(url).path)) if url.startswith("file:") else None
    if path is not None and path.is_dir():
        return clone_origin(path)
    return Origin(
        None,
        f"this attnreport was installed from {url or 'an unknown place'}, a file on this machine",
    )


def installed_origin(package_dir: Path | None = None, on_pypi: Released = released) -> Origin:
    """``Origin`` of the attnreport running now (``package_dir``: its package folder)."""
    if package_dir is None:
        import attnreport

        package_dir = Path(attnreport.__file__).resolve().parent
    home = package_dir.parent
    if home.name not in ("site-packages", "dist-packages"):
        return clone_origin(home)  # editable, or a checkout on sys.path
    found = list(importlib.metadata.distributions(name="attnreport", path=[str(home)]))
    if not found:
        return Origin(None, f"this attnreport runs from {home}, which pip did not install")
    return origin_of(found[0].read_text("direct_url.json"), found[0].version, on_pypi)


def _git(folder: Path, *args: str) -> str | None:
    """``git -C folder ARGS``'s output, stripped; None when it fails."""
    git = shutil.which("git")
    if git is None:
        return None
    done = subprocess.run(
        [git, "-C", str(folder), *args], capture_output=True, text=True, timeout=30, check=False
    )
    return done.stdout.strip() if done.returncode == 0 else None


def runner_url(remote: str) -> str | None:
    """The HTTPS address a runner clones ``remote`` from (its credentials dropped), or None
    for a folder or file on this machine."""
    if remote.startswith(("https://", "http://", "ssh://", "git://")):
        parts = urlparse(remote)
        host = parts.hostname or ""
        return f"https://{host}{parts.path}" if host else None
    scp = SCP_LIKE.fullmatch(remote)
    if scp and "/" not in scp.group(1):
        return f"https://{scp.group(1)}/{scp.group(2).lstrip('/')}"
    return None


def clone_origin(folder: Path) -> Origin:
    """The ``origin`` remote of the git clone holding ``folder``, at its commit (see the
    module docstring); why not, in one line, when a runner could not install it."""
    top = _git(folder, "rev-parse", "--show-toplevel")
    if top is None:
        git = "it is not a git clone" if shutil.which("git") else "git is not installed"
        return Origin(None, f"this attnreport runs from {folder}, and {git}")
    remote = _git(folder, "remote", "get-url", "origin")
    if not remote:
        return Origin(
            None, f"this attnreport runs from the clone {top}, which has no origin remote"
        )
    url = runner_url(remote)
    if url is None:
        return Origin(
            None, f"the origin remote of {top} is {remote}, a folder a runner cannot reach"
        )
    commit = _git(folder, "rev-parse", "HEAD") or ""
    pushed = _git(folder, "branch", "--remotes", "--contains", commit, "--list", "origin/*")
    if not pushed:
        return Origin(
            None, f"commit {commit[:12]} of {top} is not on its origin remote {url} (push it)"
        )
    said = f"commit {commit[:12]} of {url}, the origin of the clone {top}"
    if _git(folder, "status", "--porcelain", "--untracked-files=no"):
        said += " (its uncommitted changes are not in that commit)"
    return Origin(f"git+{url}@{commit}", said)


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
