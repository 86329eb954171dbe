"""The files ``attnreport init`` writes: a project that builds and publishes itself.

A project is ``attnreport.toml`` (the settings), ``sentences.txt``, a ``.gitignore`` and,
unless left out, a GitHub Actions workflow that publishes the report on GitHub Pages. The
workflow comes in two forms (``WORKFLOWS``): ``build`` installs the CPU build of torch and
runs the whole study on the runner; ``render`` draws the site from results committed to
the repository (``attnreport analyze --out results`` on a GPU machine) with no torch. The
workflow files live in ``templates/project/`` (shipped as ``attnreport.templates.project``).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from attnreport.errors import AttnReportError
from attnreport.extras import CPU_TORCH_INDEX

__all__ = ["CPU_TORCH_INDEX", "SOURCE", "WORKFLOWS", "project_files", "workflow_text"]

SOURCE = "git+https://github.com/attnreport/attnreport"
"""Where a user's pip installs attnreport from (README and the workflows say the same)."""

WORKFLOWS = ("build", "render")
WORKFLOW_PATH = ".github/workflows/attnreport.yml"


def _template(name: str) -> str:
    return resources.files("attnreport.templates").joinpath("project", name).read_text("utf-8")


def workflow_text(form: str) -> str:
    """The workflow file of ``form`` (one of ``WORKFLOWS``), installing from ``SOURCE``."""
    if form not in WORKFLOWS:
        raise AttnReportError(f"unknown workflow {form!r}; choose one of {', '.join(WORKFLOWS)}")
    return _template(f"{form}.yml").replace("__SOURCE__", SOURCE)


def project_files(workflow: str | None) -> dict[str, str]:
    """{relative POSIX path: text} of a new project; ``workflow`` None leaves it out."""
    from attnreport.config import STARTER
    from attnreport.sentences import default_sentence_text

    files = {
        "attnreport.toml": STARTER,
        "sentences.txt": default_sentence_text(),
        ".gitignore": _template("gitignore.txt"),
    }
    if workflow is not None:
        files[WORKFLOW_PATH] = workflow_text(workflow)
    return files


def write_project(target: Path, files: dict[str, str]) -> list[Path]:
    """Write ``files`` under ``target``, never overwriting: if any exists, nothing is written
    and the error names it. Returns the paths written, in order."""
    existing = [name for name in files if (target / name).exists()]
    if existing:
        raise AttnReportError(
            f"{target / existing[0]} already exists; remove it or use another --dir "
            "(nothing was written)"
        )
    written = []
    for name, text in files.items():
        path = target.joinpath(*name.split("/"))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written
