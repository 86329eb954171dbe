"""The files ``attnreport init`` writes: a project that builds and publishes itself.

A project is ``attnreport.toml`` (the settings, naming the report's authors: given to
``init``, else git's ``user.name``, else none), ``sentences.txt``, a ``.gitignore`` and,
unless left out, a GitHub Actions workflow that publishes the report on GitHub Pages. The
workflow comes in two forms (``WORKFLOWS``): ``build`` installs the CPU build of torch and
runs the whole study on the runner; ``render`` draws the site from results committed to
the repository (``attnreport analyze --out results`` on a GPU machine) with no torch. The
workflow files live in ``templates/project/`` (shipped as ``attnreport.templates.project``).
Each installs attnreport from ``source`` (``origin``: by default the one that ran ``init``,
where a runner reaches it; with none, ``init`` writes no workflow and says why).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from attnreport.errors import AttnReportError
from attnreport.extras import CPU_TORCH_INDEX
from attnreport.origin import requirement

__all__ = ["CPU_TORCH_INDEX", "WORKFLOWS", "project_files", "workflow_text"]

WORKFLOWS = ("build", "render")
EXTRAS = {"build": "analysis", "render": "render"}  # what each workflow's runner installs
WORKFLOW_PATH = ".github/workflows/attnreport.yml"


def _template(name: str) -> str:
    return resources.files("attnreport.templates").joinpath("project", name).read_text("utf-8")


def workflow_text(form: str, source: str | None) -> str:
    """The workflow file of ``form`` (one of ``WORKFLOWS``), installing attnreport from
    ``source`` (``origin.requirement``; None: an empty line its first step asks to fill)."""
    if form not in WORKFLOWS:
        raise AttnReportError(f"unknown workflow {form!r}; choose one of {', '.join(WORKFLOWS)}")
    return _template(f"{form}.yml").replace("__REQUIREMENT__", requirement(EXTRAS[form], source))


def project_files(
    workflow: str | None, source: str | None = None, authors: tuple[str, ...] = ()
) -> dict[str, str]:
    """{relative POSIX path: text} of a new project; ``workflow`` None leaves it out, and
    its workflow installs attnreport from ``source`` (see ``workflow_text``); the settings
    name ``authors`` (none: an empty list the user fills in)."""
    from attnreport.config import starter_text
    from attnreport.sentences import default_sentence_text

    files = {
        "attnreport.toml": starter_text(authors),
        "sentences.txt": default_sentence_text(),
        ".gitignore": _template("gitignore.txt"),
    }
    if workflow is not None:
        files[WORKFLOW_PATH] = workflow_text(workflow, source)
    return files


def git_author(folder: Path) -> str | None:
    """``git config user.name`` as seen from ``folder`` (None without git or a name)."""
    import subprocess

    try:
        done = subprocess.run(
            ["git", "config", "user.name"], cwd=folder if folder.is_dir() else None,
            capture_output=True, text=True, timeout=10, check=False,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None


def write_project(target: Path, files: dict[str, str]) -> tuple[list[Path], list[Path]]:
    """Write the ``files`` missing under ``target``, never overwriting one. Returns the
    paths written and the paths kept (they existed), in order; AttnReportError when every
    one exists (nothing to write)."""
    kept = [target.joinpath(*name.split("/")) for name in files if (target / name).exists()]
    if len(kept) == len(files):
        raise AttnReportError(
            f"{target} already holds every file init writes ({', '.join(files)}); nothing was written"
        )
    written = []
    for name, text in files.items():
        path = target.joinpath(*name.split("/"))
        if path in kept:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written, kept
